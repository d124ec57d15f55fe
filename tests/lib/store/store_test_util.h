// Shared fixtures for the store tests: a temporary directory, records full of awkward values,
// and field-by-field comparisons (bit-exact doubles, NaN equal to NaN).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "lib/common/records.h"

namespace codl::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "codl-store-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Equal bit for bit, or both NaN. (SQLite keeps an IEEE double's 8 bytes; -0.0 is the one value
// its integer-packing of REALs turns into +0.0, so it is compared with ==.)
inline ::testing::AssertionResult SameDouble(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return ::testing::AssertionSuccess();
  if (a == 0 && b == 0) return ::testing::AssertionSuccess();
  if (std::memcmp(&a, &b, sizeof a) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hexfloat << a << " != " << b;
}

#define EXPECT_SAME_DOUBLE(a, b) EXPECT_TRUE(::codl::store::testing::SameDouble((a), (b))) << #a

inline void ExpectSamePhases(const std::map<std::string, double>& a,
                             const std::map<std::string, double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    EXPECT_EQ(ia->first, ib->first);
    EXPECT_SAME_DOUBLE(ia->second, ib->second);
  }
}

inline void ExpectSameExperiment(const ExperimentRecord& a, const ExperimentRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.source_path, b.source_path);
  EXPECT_EQ(a.yaml, b.yaml);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.total_trials, b.total_trials);
  EXPECT_EQ(a.created_unix_ms, b.created_unix_ms);
  EXPECT_EQ(a.finished_unix_ms, b.finished_unix_ms);
}

inline void ExpectSameTrial(const TrialRecord& a, const TrialRecord& b, bool with_series = true) {
  EXPECT_EQ(a.experiment_id, b.experiment_id);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.repetition, b.repetition);
  EXPECT_EQ(a.baseline, b.baseline);
  EXPECT_EQ(a.pairing, b.pairing);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.error, b.error);
  ASSERT_EQ(a.flag_reasons.size(), b.flag_reasons.size());
  for (size_t i = 0; i < a.flag_reasons.size(); ++i) {
    EXPECT_EQ(a.flag_reasons[i].code, b.flag_reasons[i].code) << "reason " << i;
    EXPECT_EQ(a.flag_reasons[i].detail, b.flag_reasons[i].detail) << "reason " << i;
  }
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.stderr_tail, b.stderr_tail);
  EXPECT_EQ(a.victim_node, b.victim_node);
  EXPECT_SAME_DOUBLE(a.value_s, b.value_s);
  EXPECT_SAME_DOUBLE(a.wall_s, b.wall_s);
  EXPECT_SAME_DOUBLE(a.victim_cpu_s, b.victim_cpu_s);
  EXPECT_EQ(a.victim_effective_cpus, b.victim_effective_cpus);
  ExpectSamePhases(a.phase_medians, b.phase_medians);
  EXPECT_EQ(a.started_unix_ms, b.started_unix_ms);
  EXPECT_EQ(a.finished_unix_ms, b.finished_unix_ms);
  if (with_series) {
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      EXPECT_EQ(a.steps[i].step, b.steps[i].step);
      EXPECT_SAME_DOUBLE(a.steps[i].step_time_s, b.steps[i].step_time_s);
      EXPECT_SAME_DOUBLE(a.steps[i].t_s, b.steps[i].t_s);
      EXPECT_EQ(a.steps[i].warmup, b.steps[i].warmup);
      ExpectSamePhases(a.steps[i].phases, b.steps[i].phases);
    }
  }
  ASSERT_EQ(a.antagonists.size(), b.antagonists.size());
  for (size_t i = 0; i < a.antagonists.size(); ++i) {
    SCOPED_TRACE("antagonist " + std::to_string(i));
    const AntagonistResult& x = a.antagonists[i];
    const AntagonistResult& y = b.antagonists[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.injector, y.injector);
    EXPECT_EQ(x.node, y.node);
    EXPECT_SAME_DOUBLE(x.level, y.level);
    EXPECT_SAME_DOUBLE(x.target_rate, y.target_rate);
    EXPECT_SAME_DOUBLE(x.achieved_rate, y.achieved_rate);
    EXPECT_SAME_DOUBLE(x.achieved_cov, y.achieved_cov);
    EXPECT_SAME_DOUBLE(x.peak_rate, y.peak_rate);
    EXPECT_EQ(x.unit, y.unit);
    EXPECT_EQ(x.reached_target, y.reached_target);
    EXPECT_SAME_DOUBLE(x.start_skew_s, y.start_skew_s);
    EXPECT_SAME_DOUBLE(x.cpu_s, y.cpu_s);
    EXPECT_SAME_DOUBLE(x.run_s, y.run_s);
    EXPECT_EQ(x.effective_cpus, y.effective_cpus);
    if (with_series) {
      ASSERT_EQ(x.samples.size(), y.samples.size());
      for (size_t j = 0; j < x.samples.size(); ++j) {
        EXPECT_SAME_DOUBLE(x.samples[j].t_s, y.samples[j].t_s);
        EXPECT_SAME_DOUBLE(x.samples[j].achieved, y.samples[j].achieved);
        EXPECT_SAME_DOUBLE(x.samples[j].target, y.samples[j].target);
      }
    }
  }
}

inline ExperimentRecord MakeExperiment(const std::string& id, int64_t created_unix_ms,
                                       ExperimentState state = ExperimentState::kRunning) {
  ExperimentRecord e;
  e.id = id;
  e.name = "io-vs-loader " + id;
  e.source_path = "/home/u/experiments/io vs loader.yaml";
  e.yaml =
      "name: io-vs-loader\nvictim:\n  command: [codl-victim, \"--steps\", \"60\"]\n# ünïcødé ✓\n";
  e.state = state;
  e.error = "";
  e.seed = 42;
  e.total_trials = 12;
  e.created_unix_ms = created_unix_ms;
  e.finished_unix_ms = 0;
  return e;
}

// A trial with every field set, `steps` steps and `antagonists` antagonists of `samples` samples.
inline TrialRecord MakeTrial(const std::string& experiment_id, int index, int steps = 5,
                             int antagonists = 2, int samples = 7) {
  TrialRecord t;
  t.experiment_id = experiment_id;
  t.index = index;
  t.repetition = index % 3;
  t.baseline = index % 2 == 0;
  t.pairing = t.baseline ? "baseline" : "membw@0.5+storage@1";
  t.state = TrialState::kFlagged;
  t.flag_reasons = {{FlagCode::kDidNotSettle, "did not settle: 'storage' held 0.4 s of 1 s"},
                    {FlagCode::kMissedTarget, "antagonist 'storage' reached 0.87 of its target"}};
  t.error = JoinFlagReasons(t.flag_reasons);
  t.exit_code = -9;
  t.stderr_tail = std::string("Traceback (most recent call last):\n  \"quoted\" 'x'\n") +
                  std::string("nul:\0:end\n", 10) + "\xff\xfe not utf-8";
  t.victim_node = "gpu-node-07";
  t.value_s = 0.1 + index / 3.0;
  t.wall_s = 61.000000000000014;
  t.victim_cpu_s = 122.5 + index;
  t.victim_effective_cpus = "0-3,6";
  t.phase_medians = {{"read_s", 0.0123456789012345}, {"compute_s", 1.0 / 7}, {"h2d_s", 5e-324}};
  t.started_unix_ms = 1700000000123 + index;
  t.finished_unix_ms = std::numeric_limits<int64_t>::max() - index;
  for (int i = 0; i < steps; ++i) {
    VictimStep s;
    s.step = i == 0 ? std::numeric_limits<int64_t>::min() : i;
    s.step_time_s = 0.05 + i * 1e-9 + index / 1e6;
    s.t_s = i * 0.1;
    s.warmup = i < 2;
    if (i % 4 != 3) {  // some steps report no phases at all
      s.phases = {{"read_s", 0.01 * i}, {"decode_s", 1.0 / (i + 3)}, {"a \"quoted\"\n name", 2.5}};
    }
    if (i == 1) s.phases["nan_s"] = std::numeric_limits<double>::quiet_NaN();
    if (i == 2) s.phases["inf_s"] = -std::numeric_limits<double>::infinity();
    t.steps.push_back(s);
  }
  for (int a = 0; a < antagonists; ++a) {
    AntagonistResult r;
    r.name = a == 0 ? "storage" : "membw-" + std::to_string(a);
    r.injector = a == 0 ? "io_uring" : "memcpy";
    r.node = "node-" + std::to_string(a);
    r.level = 0.25 * (a + 1);
    r.target_rate = 1.5e9 * (a + 1) + 0.1;
    r.achieved_rate = 1.4999999999e9 * (a + 1);
    r.achieved_cov = 0.031415926535897934;
    r.peak_rate = 6.0000000001e9;
    r.unit = a == 0 ? "bytes/s" : "IOPS";
    r.reached_target = a % 2 == 1;
    r.start_skew_s = -0.000123;
    r.cpu_s = 1.25 * (a + 1);
    r.run_s = 63.5;
    r.effective_cpus = std::to_string(a);
    for (int j = 0; j < samples; ++j) {
      r.samples.push_back(RateSample{j * 0.25, r.target_rate * (0.9 + 1e-7 * j), r.target_rate});
    }
    t.antagonists.push_back(r);
  }
  return t;
}

// A raw query returning one value, for checks beneath the Store API (row counts, pragmas).
inline std::string QueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string v = "(error)";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* p = sqlite3_column_text(s, 0);
      v = p ? reinterpret_cast<const char*>(p) : "";
    } else {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return v;
}

inline int64_t QueryInt(const std::string& path, const std::string& sql) {
  return std::stoll(QueryText(path, sql));
}

inline void ExecRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

}  // namespace codl::store::testing
