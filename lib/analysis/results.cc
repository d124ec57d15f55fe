// Summarize: trials -> per-pairing slowdown figures of one per-trial metric (TrialMetric). The
// main figures use measured trials (state done); flagged ones (an antagonist missed its target)
// enter the "all trials" figures beside them; failed ones are counted, never used.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "lib/analysis/results.h"

#include "lib/analysis/adaptive.h"
#include "lib/analysis/confound.h"
#include "lib/analysis/multiple_comparisons.h"
#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/phase_order.h"
#include "lib/analysis/rank_summary.h"
#include "lib/common/random.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace codl::experiment {
namespace {

constexpr int kResamples = 10000;
constexpr double kConfidence = 0.95;

std::vector<double> Metrics(const std::vector<const TrialRecord*>& trials, const TrialMetric& m) {
  std::vector<double> v;
  // A non-finite value is no measurement (a done trial without steps or metric, as an imported
  // or hand-edited database might hold).
  for (const auto* t : trials) {
    const double x = TrialMetricValue(*t, m);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// Median per phase over the trials that report it.
std::map<std::string, double> PhaseMedians(const std::vector<const TrialRecord*>& trials) {
  std::map<std::string, std::vector<double>> values;
  for (const auto* t : trials) {
    for (const auto& [phase, v] : t->phase_medians) values[phase].push_back(v);
  }
  std::map<std::string, double> out;
  for (auto& [phase, v] : values) out[phase] = Median(std::move(v));
  return out;
}

// Distinct CPU lists in first-seen order, "0-3 | 4-7"; empty lists (not recorded) skipped.
void AddCpus(const std::string& cpus, std::string* joined) {
  if (cpus.empty()) return;
  const std::string padded = " | " + *joined + " | ";
  if (padded.find(" | " + cpus + " | ") != std::string::npos) return;
  *joined += (joined->empty() ? "" : " | ") + cpus;
}

// Cores the victim used over the measured trials. A trial records its effective CPUs whenever
// the agent measured CPU time: older records (no CPUs) are left out rather than read as 0.
void SummarizeVictimCpu(const std::vector<const TrialRecord*>& measured, PairingSummary* p) {
  std::vector<double> cores;
  for (const auto* t : measured) {
    if (t->victim_effective_cpus.empty()) continue;
    cores.push_back(CoresUsed(t->victim_cpu_s, t->wall_s));
    AddCpus(t->victim_effective_cpus, &p->victim_cpus);
  }
  p->victim_cores = Mean(cores);
}

std::vector<AntagonistSummary> SummarizeAntagonists(
    const std::string& key, const std::vector<const TrialRecord*>& all,
    const std::vector<const TrialRecord*>& measured,
    const std::vector<const TrialRecord*>& flagged) {
  // Figures from measured trials; from flagged ones when nothing was measured, so a pairing
  // whose antagonist never reaches its target still shows what it did reach.
  const auto& source = !measured.empty() ? measured : flagged;
  struct Acc {
    AntagonistSummary s;
    std::vector<double> target, achieved, cov, cores;
  };
  std::map<std::string, Acc> acc;
  for (const auto& [name, label] : ParsePairingKey(key)) acc[name].s.intensity = label;
  for (const auto* t : all) {
    for (const auto& r : t->antagonists) {
      Acc& a = acc[r.name];
      if (a.s.injector.empty()) {
        a.s.injector = r.injector;
        a.s.level = r.level;
        a.s.unit = r.unit;
      }
      if (!r.reached_target) ++a.s.n_missed_target;
    }
  }
  for (const auto* t : source) {
    for (const auto& r : t->antagonists) {
      Acc& a = acc[r.name];
      a.target.push_back(r.target_rate);
      a.achieved.push_back(r.achieved_rate);
      a.cov.push_back(r.achieved_cov);
      if (r.run_s > 0) a.cores.push_back(CoresUsed(r.cpu_s, r.run_s));
      AddCpus(r.effective_cpus, &a.s.cpus);
    }
  }
  std::vector<AntagonistSummary> out;
  for (auto& [name, a] : acc) {
    a.s.name = name;
    a.s.target_rate = Mean(a.target);
    a.s.achieved_rate = Mean(a.achieved);
    a.s.achieved_cov = Mean(a.cov);
    a.s.cores = Mean(a.cores);
    if (a.s.intensity.empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", a.s.level);
      a.s.intensity = a.s.level > 0 ? buf : FormatRate(a.s.target_rate, a.s.unit);
    }
    a.s.max = a.s.intensity == "max";
    out.push_back(std::move(a.s));
  }
  return out;
}

// Trials grouped by pairing key ("baseline" for every baseline trial), in index order.
struct Grouped {
  std::vector<std::string> order;  // baseline first, then by first appearance
  std::map<std::string, std::vector<const TrialRecord*>> by_key;
};

Grouped GroupByPairing(const std::vector<TrialRecord>& trials) {
  std::vector<const TrialRecord*> sorted;
  for (const auto& t : trials) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto* a, const auto* b) { return a->index < b->index; });
  Grouped g;
  for (const auto* t : sorted) {
    if (t->solo) continue;  // a workload alone: its figures are the neighbours' (neighbours.h)
    const std::string key = IsBaselineTrial(*t) ? "baseline" : t->pairing;
    if (!g.by_key.count(key)) g.order.push_back(key);
    g.by_key[key].push_back(t);
  }
  std::stable_partition(g.order.begin(), g.order.end(),
                        [](const std::string& k) { return k == "baseline"; });
  return g;
}

// What every pairing is compared against.
struct Baseline {
  std::vector<double> metrics;  // per measured baseline trial
  double median = 0;
  std::map<std::string, double> phase_medians;
  std::vector<const TrialRecord*> done;  // its measured trials
};

Baseline SummarizeBaseline(const Grouped& g, const TrialMetric& metric) {
  Baseline b;
  std::vector<const TrialRecord*> done;
  if (auto it = g.by_key.find("baseline"); it != g.by_key.end()) {
    for (const auto* t : it->second) {
      if (t->state == TrialState::kDone) done.push_back(t);
    }
  }
  b.metrics = Metrics(done, metric);
  b.median = Median(b.metrics);
  b.phase_medians = PhaseMedians(done);
  b.done = std::move(done);
  return b;
}

// `values` against the baseline's: slowdown (> 1 = slower, whatever the metric's direction)
// and its bootstrap CI.
struct Ratio {
  double slowdown = kNaN;
  ConfidenceInterval ci;
};

Ratio SlowdownOf(const std::vector<double>& values, const Baseline& base, const TrialMetric& metric,
                 uint64_t seed) {
  BootstrapOptions opt;
  opt.resamples = kResamples;
  opt.confidence = kConfidence;
  opt.seed = seed;
  Ratio r;
  const double median = Median(values);
  const bool inverse = metric.HigherIsFaster();
  const double num = inverse ? base.median : median, den = inverse ? median : base.median;
  if (den > 0) r.slowdown = num / den;
  r.ci = inverse ? BootstrapMedianRatioCI(base.metrics, values, opt)
                 : BootstrapMedianRatioCI(values, base.metrics, opt);
  return r;
}

struct Split {
  std::vector<const TrialRecord*> measured, flagged;
};

Split SplitByState(const std::vector<const TrialRecord*>& trials, PairingSummary* p) {
  Split s;
  for (const auto* t : trials) {
    switch (t->state) {
      case TrialState::kDone: s.measured.push_back(t); break;
      case TrialState::kFlagged:
        s.flagged.push_back(t);
        ++p->n_flagged;
        break;
      case TrialState::kFailed: ++p->n_failed; break;
      default: ++p->n_not_run; break;
    }
  }
  p->n = static_cast<int>(s.measured.size());
  p->n_all = p->n + p->n_flagged;
  if (p->n_all > 0) p->flag_rate = static_cast<double>(p->n_flagged) / p->n_all;
  return s;
}

// Below 3 trials on either side the percentile bootstrap has almost nothing to resample (its
// simulated coverage: 67 % at n = 2); a zero-width "95 % CI" would overclaim.
bool CiMeaningful(size_t n, size_t n_base) { return n >= 3 && n_base >= 3; }

// Holm p and Benjamini-Hochberg q over the pairings that have a p (the baseline has none).
void AdjustAcrossPairings(std::vector<PairingSummary>* pairings) {
  std::vector<double> p;
  for (const auto& s : *pairings) p.push_back(s.p_value);
  const std::vector<double> holm = HolmAdjust(p), bh = BenjaminiHochbergAdjust(p);
  for (size_t i = 0; i < pairings->size(); ++i) {
    (*pairings)[i].p_holm = holm[i];
    (*pairings)[i].q_bh = bh[i];
  }
}

// The held-target figures, and the same over every trial whose victim ran, so that excluding
// flagged trials is visible rather than silent. The rank test is on the held-target trials.
void CompareToBaseline(const Split& s, const Baseline& base, const TrialMetric& metric,
                       uint64_t seed, PairingSummary* p) {
  const std::vector<double> m = Metrics(s.measured, metric);
  const Ratio held = SlowdownOf(m, base, metric, seed);
  p->slowdown = held.slowdown;
  p->ci_small_n = !CiMeaningful(m.size(), base.metrics.size());
  if (!p->ci_small_n) {
    p->ci_low = held.ci.low;
    p->ci_high = held.ci.high;
    p->ci_exact = held.ci.exact;
  }
  std::vector<const TrialRecord*> ran = s.measured;
  ran.insert(ran.end(), s.flagged.begin(), s.flagged.end());
  const Ratio all = SlowdownOf(Metrics(ran, metric), base, metric, seed);
  p->slowdown_all = all.slowdown;
  if (CiMeaningful(ran.size(), base.metrics.size())) {
    p->ci_all_low = all.ci.low;
    p->ci_all_high = all.ci.high;
  }
  MannWhitneyResult mw = MannWhitneyU(m, base.metrics);
  p->p_value = mw.p_value;
  p->p_method = mw.method;
  p->p_min = MannWhitneyMinP(m.size(), base.metrics.size());
  if (!(p->p_min > 0.05)) {
    p->mde = MinimumDetectableSlowdown(RobustRelativeSpread(base.metrics), m.size(),
                                       base.metrics.size());
  }
}

PairingSummary SummarizePairing(const std::string& key,
                                const std::vector<const TrialRecord*>& trials, const Baseline& base,
                                const TrialMetric& metric, uint64_t experiment_seed) {
  PairingSummary p;
  p.pairing = key;
  p.baseline = key == "baseline";
  const Split s = SplitByState(trials, &p);
  const std::vector<double> m = Metrics(s.measured, metric);
  p.metric_median = Median(m);
  if (metric.Unit() == "s") p.median_metric_s = p.metric_median;
  p.cov = CoefficientOfVariation(m);
  SummarizeVictimCpu(s.measured, &p);
  if (p.baseline) {
    if (base.median > 0 && p.metric_median > 0) p.slowdown = p.slowdown_all = 1;
  } else {
    CompareToBaseline(s, base, metric, experiment_seed ^ Fnv1a(key), &p);
    p.antagonists = SummarizeAntagonists(key, trials, s.measured, s.flagged);
  }
  const std::map<std::string, double> medians = PhaseMedians(s.measured);
  for (const auto& phase : OrderPhases(s.measured)) {
    const double median = medians.at(phase);
    PhaseSlowdown ps;
    ps.phase = phase;
    ps.median_s = median;
    auto b = base.phase_medians.find(phase);
    if (b != base.phase_medians.end() && b->second > 0) ps.slowdown = median / b->second;
    p.phases.push_back(ps);
  }
  BootstrapOptions opt;
  opt.resamples = kResamples;
  opt.confidence = kConfidence;
  opt.seed = experiment_seed ^ Fnv1a(key);
  AttributePairing(s.measured, base.done, opt, &p);
  p.confounds = CpuConfounds(p);
  std::vector<double> cache_total, cache_share;
  for (const TrialRecord* t : s.measured) {
    if (t->cache_total_bytes < 0) continue;
    cache_total.push_back(static_cast<double>(t->cache_total_bytes));
    if (t->cache_total_bytes > 0) {
      cache_share.push_back(static_cast<double>(t->cache_resident_bytes) /
                            static_cast<double>(t->cache_total_bytes));
    }
  }
  p.cache_total_bytes = Median(cache_total);
  p.cache_resident_fraction = Median(cache_share);
  p.ranks = SpreadOfRanks(s.measured);
  p.telemetry = SummarizeTelemetry(s.measured);
  std::vector<const TrialRecord*> ran = s.measured;
  ran.insert(ran.end(), s.flagged.begin(), s.flagged.end());
  p.telemetry_all = SummarizeTelemetry(ran);
  return p;
}

// victim.cache as-is (the default) over data a victim node's memory could hold: whether the page
// cache held it was chance, not the plan. The node's memory is its provenance (memory_bytes of
// the victim's nodes; the largest, since any of them could hold it). "" otherwise.
std::string CacheAsIsConfound(const ExperimentSpec& spec, const nlohmann::json& prov,
                              const PairingSummary& baseline) {
  if (spec.victim.cache.mode != "as-is" || spec.victim.cache.paths.empty()) return "";
  if (!std::isfinite(baseline.cache_total_bytes)) return "";
  if (!prov.is_object() || !prov.contains("nodes") || !prov["nodes"].is_object()) return "";
  std::vector<std::string> victim_nodes;
  if (prov.contains("victim") && prov["victim"].is_object() && prov["victim"].contains("nodes") &&
      prov["victim"]["nodes"].is_array()) {
    for (const auto& n : prov["victim"]["nodes"])
      if (n.is_string()) victim_nodes.push_back(n.get<std::string>());
  }
  if (victim_nodes.empty()) {
    for (const auto& [name, node] : prov["nodes"].items()) victim_nodes.push_back(name);
  }
  std::string node;
  double memory = 0;
  for (const std::string& n : victim_nodes) {
    if (!prov["nodes"].contains(n) || !prov["nodes"][n].is_object()) continue;
    const auto& m = prov["nodes"][n].value("memory_bytes", nlohmann::json());
    if (m.is_number() && m.get<double>() > memory) {
      memory = m.get<double>();
      node = n;
    }
  }
  if (memory <= 0 || baseline.cache_total_bytes >= memory) return "";
  std::string resident;
  if (std::isfinite(baseline.cache_resident_fraction)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", 100 * baseline.cache_resident_fraction);
    resident = std::string(" (") + buf + "% resident at the baseline's start, median)";
  }
  return "victim.cache is as-is and the " + FormatSize(baseline.cache_total_bytes) +
         " under its paths fit in node " + node + "'s " + FormatSize(memory) +
         " of memory: whether they were cached was left to chance" + resident +
         "; set victim.cache.mode cold or warm";
}

}  // namespace

std::string NothingMeasured(const ExperimentResults& r) {
  int measured = 0, failed = 0, flagged = 0, not_run = 0, interfered = 0, with_slowdown = 0;
  bool baseline_measured = false;
  for (const PairingSummary& p : r.pairings) {
    measured += p.n;
    failed += p.n_failed;
    flagged += p.n_flagged;
    not_run += p.n_not_run;
    if (p.baseline) {
      baseline_measured = p.n > 0;
      continue;
    }
    ++interfered;
    // Held-target, or over all trials (flagged ones included): either is a figure to read.
    with_slowdown += std::isfinite(p.slowdown) || std::isfinite(p.slowdown_all) ? 1 : 0;
  }
  const int all = measured + failed + flagged + not_run;
  // (A flagged trial's figure over all trials needs measured baselines: none here.)
  if (measured == 0) {
    std::string why = all == 1 ? "its only trial was not measured ("
                               : "none of its " + std::to_string(all) + " trials was measured (";
    std::string parts;
    auto add = [&parts](int n, const char* what) {
      if (n > 0) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    add(failed, "failed");
    add(flagged, "flagged");
    add(not_run, "not run");
    return why + (parts.empty() ? "no trials" : parts) + ")";
  }
  if (interfered > 0 && with_slowdown == 0) {
    return baseline_measured ? "no interfered pairing has a trial whose victim ran to its end"
                             : "no baseline trial was measured, so no slowdown is known";
  }
  return "";
}

std::map<std::string, std::string> PairingIntensities(const std::string& key) {
  return ParsePairingKey(key);
}

std::string UnfinishedLine(const ExperimentResults& r) {
  if (r.state == "done") return "";
  std::string line = "partial results: experiment " + r.state;
  if (!r.state_error.empty() && r.state != "running" && r.state != "queued")
    line += " (" + TerminalSafe(r.state_error) + ")";
  line += (r.state == "running" || r.state == "queued" ? " — so far " : " after ") +
          std::to_string(r.trials_committed) + " of " + std::to_string(r.trials_planned) +
          " planned trials";
  if (r.state == "interrupted" || r.state == "cancelled" || r.state == "failed")
    line += "; continue it with `codlctl resume " + r.experiment_id + "`";
  return line;
}

std::string RetriedLine(const ExperimentResults& r) {
  if (r.trials_retried == 0) return "";
  std::string why;
  for (const auto& [kind, n] : r.retried_for)
    why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + (kind.empty() ? "unknown" : kind);
  return "retried: " + std::to_string(r.trials_retried) + " of " +
         std::to_string(r.trials_committed) + " trials ran more than once" +
         (why.empty() ? "" : " (attempts dropped: " + why + ")") +
         "; each counts its last attempt only";
}

ExperimentResults Summarize(const ExperimentRecord& experiment,
                            const std::vector<TrialRecord>& trials,
                            const SummarizeOptions& options) {
  ExperimentResults res;
  res.experiment_id = experiment.id;
  res.name = experiment.name;
  res.seed = experiment.seed;
  res.yaml = experiment.yaml;
  res.created_unix_ms = experiment.created_unix_ms;
  res.finished_unix_ms = experiment.finished_unix_ms;
  res.provenance_json = experiment.provenance_json;
  res.stop_reason = experiment.stop_reason;
  res.submitter = experiment.submitter;
  res.state = ToString(experiment.state);
  res.state_error = experiment.error;
  res.trials_planned = experiment.total_trials;
  for (const auto& t : trials) {
    if (!Committed(t.state)) continue;
    ++res.trials_committed;
    res.trials_retried += t.attempt > 1;
    for (FailureKind k : t.earlier_failures) ++res.retried_for[ToString(k)];
  }
  const nlohmann::json prov = nlohmann::json::parse(experiment.provenance_json, nullptr, false);
  if (prov.is_object() && prov.contains("resumptions") && prov["resumptions"].is_array())
    res.resumptions = static_cast<int>(prov["resumptions"].size());
  if (prov.is_object() && prov.contains("nodes") && prov["nodes"].is_object()) {
    for (const auto& [name, node] : prov["nodes"].items()) {
      const auto gpu = node.is_object() ? node.find("gpu") : node.end();
      if (gpu == node.end() || !gpu->is_object()) continue;
      const auto label = gpu->find("gpu_device");
      if (label != gpu->end() && label->is_string() && *label != "hardware")
        res.gpu_device = label->get<std::string>();
    }
  }
  res.bootstrap_resamples = kResamples;
  res.confidence = kConfidence;
  res.metric = options.metric.Name();
  res.metric_unit = options.metric.Unit();
  res.noisy_cov_threshold = options.noisy_cov_threshold;

  const Grouped g = GroupByPairing(trials);
  const Baseline base = SummarizeBaseline(g, options.metric);
  res.baseline_cov = CoefficientOfVariation(base.metrics);
  res.noisy_baseline = res.baseline_cov > options.noisy_cov_threshold;
  for (const auto& key : g.order) {
    res.pairings.push_back(
        SummarizePairing(key, g.by_key.at(key), base, options.metric, experiment.seed));
    PairingSummary& p = res.pairings.back();
    if (p.baseline) continue;
    BootstrapOptions opt;
    opt.resamples = kResamples;
    opt.confidence = kConfidence;
    opt.seed = experiment.seed ^ Fnv1a("neighbours:" + key);
    p.neighbours = SummarizeNeighbours(g.by_key.at(key), trials, p.slowdown, opt);
  }
  AdjustAcrossPairings(&res.pairings);
  const std::shared_ptr<const ExperimentSpec> spec =
      options.spec ? options.spec : ReadStoredExperiment(experiment).spec;
  res.spec = spec;
  res.crosstalk = spec && spec->crosstalk_window_s > 0;
  const auto base_it = std::find_if(res.pairings.begin(), res.pairings.end(),
                                    [](const PairingSummary& p) { return p.baseline; });
  if (spec && base_it != res.pairings.end()) {
    if (std::string c = CacheAsIsConfound(*spec, prov, *base_it); !c.empty())
      base_it->confounds.push_back(std::move(c));
  }
  for (PairingSummary& p : res.pairings) {
    if (res.crosstalk) {
      p.confounds.clear();  // no victim: the idle window's CPU share is not a figure
    } else if (base_it != res.pairings.end() && !p.baseline) {
      for (std::string& c : TelemetryConfounds(p, *base_it)) p.confounds.push_back(std::move(c));
    }
  }
  res.interactions = SummarizeInteractions(
      MeasuredSamples(trials, options.metric), g.order,
      {kResamples, kConfidence, experiment.seed, options.metric.HigherIsFaster()});
  // The tolerance searches the YAML asked for, judged as the controller judged them.
  if (spec) res.tolerance = ToleranceResults(*spec, res.pairings, trials);
  if (res.crosstalk) res.crosstalk_matrix = SummarizeCrosstalk(res);
  res.pressure = SummarizePressure(trials, {kResamples, kConfidence, experiment.seed});
  int first_wrong = -1;  // the earliest trial's detail, whatever order `trials` come in
  for (const TrialRecord& t : trials) {
    for (const FlagReason& f : t.flag_reasons) {
      if (f.code != FlagCode::kMetricLooksWrong) continue;
      ++res.n_metric_looks_wrong;
      if (first_wrong < 0 || t.index < first_wrong) {
        first_wrong = t.index;
        res.metric_looks_wrong = f.detail;
      }
    }
  }
  for (const TrialRecord& t : trials) {
    if (t.state != TrialState::kFailed) continue;
    res.failed_trials.push_back({t.index, t.pairing, FailureWithStderr(t.error, t.stderr_tail),
                                 FailureHint(t.stderr_tail)});
  }
  std::sort(res.failed_trials.begin(), res.failed_trials.end(),
            [](const FailedTrial& a, const FailedTrial& b) { return a.index < b.index; });
  return res;
}

StoredExperiment ReadStoredExperiment(const ExperimentRecord& record) {
  StoredExperiment s;
  auto spec = ParseExperiment(record.yaml, record.source_path);
  if (spec.ok()) {
    s.spec = std::make_shared<const ExperimentSpec>(std::move(*spec));
  } else {
    s.parse_error = spec.error();
  }
  return s;
}

SummarizeOptions StoredExperiment::Options(const TrialMetric* metric) const {
  SummarizeOptions o;
  o.metric = metric != nullptr ? *metric : this->metric();
  o.spec = spec;
  return o;
}

ExperimentResults Summarize(const ExperimentRecord& experiment,
                            const std::vector<TrialRecord>& trials, double noisy_cov_threshold) {
  SummarizeOptions options;
  options.noisy_cov_threshold = noisy_cov_threshold;
  return Summarize(experiment, trials, options);
}

}  // namespace codl::experiment
