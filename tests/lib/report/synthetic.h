// A synthetic experiment for report tests: a baseline and two antagonists (membw, storage) at
// two levels (0.5, 1), each trial with steps, phase medians and antagonist rate samples.
// Without jitter the slowdowns are exact: membw 1.10x / 1.25x, storage 1.50x / 2.40x.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/common/records.h"

namespace codl::report::testing {

struct SyntheticOptions {
  std::string name = "resnet50 under membw + storage";
  int repetitions = 5;
  double jitter = 0;  // relative spread of trial metrics and step times, e.g. 0.03
  bool phases = true;
  bool steps = true;
  bool excluded = false;  // add one failed and one flagged storage@1 trial
  bool combined = false;  // add a membw@1+storage@1 pairing
  // codl-victim's full pipeline: data_wait_s (30 % of the step), h2d_s and comm_s under 1 %
  // of it, beside read_s and compute_s; and antagonist CPU time (0.5 cores).
  bool pipeline = false;
};

struct Synthetic {
  ExperimentRecord experiment;
  std::vector<TrialRecord> trials;
};

namespace detail {

// Deterministic uniform [-1, 1): tests must not depend on std::rand or the platform.
inline double Jitter(uint64_t* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<double>(*state >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

struct Pairing {
  std::string antagonist;  // "" for the baseline
  double level;
  double slowdown;
  double read_factor;  // read phase slowdown; compute absorbs the rest
};

inline AntagonistResult Antagonist(const std::string& name, double level, double t_end,
                                   double jitter, uint64_t* rng) {
  AntagonistResult a;
  a.name = name;
  a.injector = name == "membw" ? "memcpy" : "io_uring";
  a.node = "node-a";
  a.unit = "bytes/s";
  a.peak_rate = name == "membw" ? 20e9 : 4.0 * 1024 * 1024 * 1024;
  a.level = level;
  a.target_rate = level * a.peak_rate;
  // Storage at full level falls a little short of the target, as real disks do.
  const double reach = name == "storage" && level >= 1 ? 0.92 : 0.98;
  // Samples from the settle period (negative t) to just past the victim's end; the first
  // second ramps up.
  for (double t = -3; t <= t_end + 0.5; t += 0.5) {
    const double ramp = t < -2 ? 0.6 : 1.0;
    const double noise = jitter > 0 ? 1 + 0.02 * Jitter(rng) : 1;
    a.samples.push_back({t, a.target_rate * reach * ramp * noise, a.target_rate});
  }
  a.achieved_rate = a.target_rate * reach;
  a.achieved_cov = 0.03;
  return a;
}

}  // namespace detail

inline Synthetic MakeSynthetic(const SyntheticOptions& o = {}) {
  using detail::Jitter;
  Synthetic s;
  s.experiment.id = "exp-0042";
  s.experiment.name = o.name;
  s.experiment.source_path = "experiments/resnet50.yaml";
  s.experiment.yaml = "name: " + o.name + "\nvictim: {command: [python, train.py]}\n";
  s.experiment.state = ExperimentState::kDone;
  s.experiment.seed = 7;
  s.experiment.created_unix_ms = 1714557600000;  // 2024-05-01 10:00:00 UTC
  s.experiment.finished_unix_ms = 1714561200000;

  std::vector<detail::Pairing> pairings = {{"", 0, 1.0, 1.0},
                                           {"membw", 0.5, 1.10, 1.05},
                                           {"membw", 1, 1.25, 1.125},
                                           {"storage", 0.5, 1.50, 2.25},
                                           {"storage", 1, 2.40, 4.5}};
  uint64_t rng = 12345;
  int index = 0;
  constexpr double kBase = 1.0, kRead = 0.4;
  auto make = [&](const detail::Pairing& p, int rep, TrialState state,
                  const std::vector<std::string>& names) {
    TrialRecord t;
    t.experiment_id = s.experiment.id;
    t.index = index++;
    t.repetition = rep;
    t.baseline = names.empty();
    if (t.baseline) {
      t.pairing = "baseline";
    } else {
      for (const auto& n : names) {
        char level[16];
        std::snprintf(level, sizeof level, "%g", p.level);
        t.pairing += (t.pairing.empty() ? "" : "+") + n + "@" + level;
      }
    }
    t.state = state;
    t.victim_node = "node-a";
    const double noise = 1 + o.jitter * Jitter(&rng);
    t.value_s = kBase * p.slowdown * noise;
    const double read = kRead * p.read_factor * noise;
    if (o.phases) t.phase_medians = {{"read_s", read}, {"compute_s", t.value_s - read}};
    if (o.phases && o.pipeline) {
      t.phase_medians["data_wait_s"] = 0.3 * t.value_s;
      t.phase_medians["h2d_s"] = 0.002 * kBase * noise;
      t.phase_medians["comm_s"] = 0.003 * kBase * p.slowdown;
    }
    t.started_unix_ms = s.experiment.created_unix_ms + t.index * 60000;
    t.finished_unix_ms = t.started_unix_ms + 50000;
    double clock = 0;
    if (o.steps) {
      for (int k = 0; k < 45; ++k) {
        VictimStep step;
        step.step = k;
        step.warmup = k < 5;
        step.step_time_s = t.value_s * (step.warmup ? 1.6 - 0.1 * k : 1 + o.jitter * Jitter(&rng));
        if (o.phases && o.pipeline) {
          // As codl-victim reports them: the on-path phases add up to the step, read_s runs in
          // the loader threads beside it.
          const double f = step.step_time_s / t.value_s;
          step.phases = {{"data_wait_s", t.phase_medians["data_wait_s"] * f},
                         {"read_s", read * f},
                         {"h2d_s", t.phase_medians["h2d_s"]},
                         {"comm_s", t.phase_medians["comm_s"]}};
          step.phases["compute_s"] = step.step_time_s - step.phases["data_wait_s"] -
                                     step.phases["h2d_s"] - step.phases["comm_s"];
        } else if (o.phases) {
          step.phases = {{"read_s", read * step.step_time_s / t.value_s},
                         {"compute_s", (t.value_s - read) * step.step_time_s / t.value_s}};
        }
        clock += step.step_time_s;
        step.t_s = clock;
        t.steps.push_back(step);
      }
    }
    t.wall_s = clock > 0 ? clock : t.value_s * 45;
    for (const auto& n : names) {
      t.antagonists.push_back(detail::Antagonist(n, p.level, t.wall_s, o.jitter, &rng));
      if (o.pipeline)
        t.antagonists.back().cpu_s = 0.5 * t.wall_s, t.antagonists.back().run_s = t.wall_s;
    }
    return t;
  };
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (const auto& p : pairings) {
      std::vector<std::string> names;
      if (!p.antagonist.empty()) names.push_back(p.antagonist);
      s.trials.push_back(make(p, rep, TrialState::kDone, names));
    }
    if (o.combined) {
      s.trials.push_back(make({"", 1, 2.9, 4.8}, rep, TrialState::kDone, {"membw", "storage"}));
    }
  }
  if (o.excluded) {
    TrialRecord failed = make(pairings[4], o.repetitions, TrialState::kFailed, {"storage"});
    failed.exit_code = 137;
    failed.error = "victim killed: out of memory";
    failed.value_s = 0;
    s.trials.push_back(failed);
    TrialRecord flagged = make(pairings[4], o.repetitions, TrialState::kFlagged, {"storage"});
    flagged.error = "storage reached 61% of its target";
    flagged.antagonists[0].reached_target = false;
    s.trials.push_back(flagged);
  }
  s.experiment.total_trials = static_cast<int>(s.trials.size());
  return s;
}

}  // namespace codl::report::testing
