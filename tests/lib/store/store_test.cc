// Store: round-trips of every record field, replace-on-resave, "latest", errors, interruption.
#include "lib/store/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "lib/common/process_token.h"
#include "lib/store/phases_json.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using ::testing::ElementsAre;
using testing::ExecRaw;
using testing::ExpectSameExperiment;
using testing::ExpectSameTrial;
using ::testing::HasSubstr;
using testing::MakeExperiment;
using testing::MakeTrial;
using testing::QueryInt;
using testing::QueryText;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("codl-results.db");
    auto s = Store::Open(path_);
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(s).value();
  }
  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, OpensInWalModeAtLatestVersion) {
  EXPECT_EQ(store_->SchemaVersion(), Store::LatestSchemaVersion());
  EXPECT_GE(Store::LatestSchemaVersion(), 2);
  EXPECT_EQ(store_->path(), path_);
  EXPECT_EQ(QueryText(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryInt(path_, "PRAGMA application_id"), 0x436F444C);
  // Reopening an up-to-date database changes nothing.
  auto again = Store::Open(path_);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ((*again)->SchemaVersion(), Store::LatestSchemaVersion());
}

// CODL_STORE_BUSY_TIMEOUT_MS: a value outside 1..3600000 ms is an error naming it, not a
// silent fall back to the 10 s default; a valid one opens.
TEST_F(StoreTest, ABadBusyTimeoutVariableIsAnErrorNamingItsRange) {
  for (const char* bad : {"abc", "0", "-5", "3600001", "10s", "99999999999999999999"}) {
    setenv("CODL_STORE_BUSY_TIMEOUT_MS", bad, 1);
    auto s = Store::Open(path_);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.error(), HasSubstr(std::string("CODL_STORE_BUSY_TIMEOUT_MS='") + bad + "'"));
    EXPECT_THAT(s.error(), HasSubstr("from 1 to 3600000"));
  }
  setenv("CODL_STORE_BUSY_TIMEOUT_MS", "2500", 1);
  auto ok = Store::Open(path_);
  EXPECT_TRUE(ok.ok()) << ok.error();
  unsetenv("CODL_STORE_BUSY_TIMEOUT_MS");
}

TEST_F(StoreTest, ExperimentRoundTripsEveryField) {
  for (int i = 0; i < 6; ++i) {
    ExperimentRecord e =
        MakeExperiment("exp-" + std::to_string(i), 1000 + i, static_cast<ExperimentState>(i));
    e.seed = i == 0 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << 63) + i;
    e.error = i == 3 ? "victim failed:\n\"exit 1\"" : "";
    e.total_trials = 1000000 + i;
    e.finished_unix_ms = i == 2 ? 1700000009999 : 0;
    e.yaml += std::string("\0tail", 5);
    ASSERT_TRUE(store_->CreateExperiment(e).ok());
    auto got = store_->GetExperiment(e.id);
    ASSERT_TRUE(got.ok()) << got.error();
    ExpectSameExperiment(*got, e);
  }
}

TEST_F(StoreTest, TrialRoundTripsEveryField) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  std::vector<TrialRecord> saved;
  for (int i = 0; i < 6; ++i) {
    TrialRecord t = MakeTrial("e1", i, /*steps=*/9, /*antagonists=*/i % 3, /*samples=*/11);
    t.state = static_cast<TrialState>(i);
    if (i == 1) t.value_s = std::numeric_limits<double>::quiet_NaN();  // failed: no metric
    if (i == 2) t.wall_s = std::numeric_limits<double>::infinity();
    if (i == 3) t.phase_medians.clear();
    Status s = store_->SaveTrial(t);
    ASSERT_TRUE(s.ok()) << s.error();
    saved.push_back(t);
  }
  auto got = store_->GetTrials("e1");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    SCOPED_TRACE("trial " + std::to_string(i));
    ExpectSameTrial((*got)[i], saved[i]);
  }
}

TEST_F(StoreTest, TrialsComeBackInIndexOrderAndWithoutSeriesOnRequest) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  for (int i : {3, 0, 2, 1}) ASSERT_TRUE(store_->SaveTrial(MakeTrial("e1", i)).ok());
  auto got = store_->GetTrials("e1", /*with_series=*/false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const TrialRecord& t = (*got)[i];
    EXPECT_EQ(t.index, i);
    EXPECT_TRUE(t.steps.empty());
    ASSERT_EQ(t.antagonists.size(), 2u);
    EXPECT_TRUE(t.antagonists[0].samples.empty());
    ExpectSameTrial(t, MakeTrial("e1", i), /*with_series=*/false);
  }
}

TEST_F(StoreTest, ResavingATrialReplacesItAndItsChildren) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  ASSERT_TRUE(store_->SaveTrial(MakeTrial("e1", 0, 50, 3, 100)).ok());
  ASSERT_TRUE(store_->SaveTrial(MakeTrial("e1", 1, 4, 1, 4)).ok());  // a neighbour, untouched

  TrialRecord again = MakeTrial("e1", 0, 2, 1, 3);
  again.state = TrialState::kDone;
  again.error = "";
  again.phase_medians = {{"only_s", 9.5}};
  ASSERT_TRUE(store_->SaveTrial(again).ok());

  auto got = store_->GetTrials("e1");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 2u);
  ExpectSameTrial((*got)[0], again);
  ExpectSameTrial((*got)[1], MakeTrial("e1", 1, 4, 1, 4));
  // No orphans below the API: only the new trial's and the neighbour's rows remain.
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM trials"), 2);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM victim_steps"), 2 + 4);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM trial_antagonists"), 1 + 1);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM antagonist_samples"), 3 + 4);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM trial_phase_medians"), 1 + 3);
}

// Every per-trial metric is stored (migration 3) and replaced with its trial.
TEST_F(StoreTest, TrialMetricsAreStoredForEveryMetricAndReplacedWithTheTrial) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  TrialRecord t = MakeTrial("e1", 0, /*steps=*/6, 0, 0);  // 2 warmup + 4 measured steps
  for (size_t i = 0; i < t.steps.size(); ++i) t.steps[i].step_time_s = i < 2 ? 9 : 0.25;
  ASSERT_TRUE(store_->SaveTrial(t).ok());
  auto got = store_->GetTrialMetrics("e1");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 1u);
  const auto& m = got->at(0);
  EXPECT_THAT((std::vector<std::string>{"elapsed", "mean", "median", "p90", "p99", "throughput"}),
              ::testing::ElementsAreArray([&] {
                std::vector<std::string> names;
                for (const auto& [name, v] : m) names.push_back(name);
                return names;
              }()));
  EXPECT_DOUBLE_EQ(m.at("elapsed"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("throughput"), 4.0);
  EXPECT_DOUBLE_EQ(m.at("median"), 0.25);

  t.steps.resize(3);  // resaved with one measured step: the old values go with the old row
  ASSERT_TRUE(store_->SaveTrial(t).ok());
  got = store_->GetTrialMetrics("latest");
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_DOUBLE_EQ(got->at(0).at("elapsed"), 0.25);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM trial_metrics"), 6);
  EXPECT_FALSE(store_->GetTrialMetrics("nope").ok());
}

TEST_F(StoreTest, LatestIsNewestByCreatedTimeThenByInsertion) {
  EXPECT_THAT(store_->GetExperiment("latest").error(), HasSubstr("no experiments in " + path_));
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("old", 100)).ok());
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("newest-a", 300)).ok());
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("middle", 200)).ok());
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("newest-b", 300)).ok());  // tie: later row
  auto latest = store_->GetExperiment("latest");
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ(latest->id, "newest-b");

  auto list = store_->ListExperiments();
  ASSERT_TRUE(list.ok()) << list.error();
  std::vector<std::string> ids;
  for (const auto& e : *list) ids.push_back(e.id);
  EXPECT_THAT(ids, ElementsAre("newest-b", "newest-a", "middle", "old"));

  ASSERT_TRUE(store_->SaveTrial(MakeTrial("newest-b", 0)).ok());
  auto trials = store_->GetTrials("latest");
  ASSERT_TRUE(trials.ok()) << trials.error();
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ((*trials)[0].experiment_id, "newest-b");
}

TEST_F(StoreTest, UnknownExperimentIsAnErrorNamingIdAndFile) {
  const std::string want = "no experiment 'nope' in " + path_;
  EXPECT_EQ(store_->GetExperiment("nope").error(), want);
  EXPECT_EQ(store_->GetTrials("nope").error(), want);
  EXPECT_EQ(store_->UpdateExperiment("nope", ExperimentState::kDone, "", 5).error(), want);
  Status s = store_->SaveTrial(MakeTrial("nope", 0));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error(), want);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM trials"), 0);
}

TEST_F(StoreTest, CreateRefusesDuplicateEmptyAndReservedIds) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  EXPECT_EQ(store_->CreateExperiment(MakeExperiment("e1", 2)).error(),
            "experiment 'e1' already exists in " + path_);
  EXPECT_FALSE(store_->CreateExperiment(MakeExperiment("", 2)).ok());
  EXPECT_THAT(store_->CreateExperiment(MakeExperiment("latest", 2)).error(), HasSubstr("reserved"));
  auto e = store_->GetExperiment("e1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->created_unix_ms, 1);  // the original, untouched
}

TEST_F(StoreTest, UpdateExperimentSetsStateErrorAndFinishTime) {
  ExperimentRecord e = MakeExperiment("e1", 1);
  ASSERT_TRUE(store_->CreateExperiment(e).ok());
  ASSERT_TRUE(store_->UpdateExperiment("e1", ExperimentState::kFailed, "agent lost", 77).ok());
  auto got = store_->GetExperiment("e1");
  ASSERT_TRUE(got.ok());
  e.state = ExperimentState::kFailed;
  e.error = "agent lost";
  e.finished_unix_ms = 77;
  ExpectSameExperiment(*got, e);
  EXPECT_EQ(got->error_code, StatusCode::kOk) << "a failure stored without a code";
}

TEST_F(StoreTest, AFailedExperimentKeepsItsCode) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  ASSERT_TRUE(store_
                  ->UpdateExperiment("e1", ExperimentState::kFailed, "agent unreachable", 77,
                                     StatusCode::kUnavailable)
                  .ok());
  auto got = store_->GetExperiment("e1");
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got->error_code, StatusCode::kUnavailable);
  auto listed = store_->ListExperiments();
  ASSERT_TRUE(listed.ok()) << listed.error();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().error_code, StatusCode::kUnavailable);
}

TEST_F(StoreTest, MarkUnfinishedInterruptedMarksExperimentsAndCancelsRunningTrials) {
  ASSERT_TRUE(
      store_->CreateExperiment(MakeExperiment("running", 2, ExperimentState::kRunning)).ok());
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("queued", 1, ExperimentState::kQueued)).ok());
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("done", 3, ExperimentState::kDone)).ok());
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("failed", 4, ExperimentState::kFailed)).ok());
  auto trial = [](const std::string& exp, int idx, TrialState state) {
    TrialRecord t = MakeTrial(exp, idx, 1, 1, 1);
    t.state = state;
    t.error = "";
    return t;
  };
  ASSERT_TRUE(store_->SaveTrial(trial("running", 0, TrialState::kDone)).ok());
  ASSERT_TRUE(store_->SaveTrial(trial("running", 1, TrialState::kRunning)).ok());
  ASSERT_TRUE(store_->SaveTrial(trial("running", 2, TrialState::kPending)).ok());
  ASSERT_TRUE(store_->SaveTrial(trial("done", 0, TrialState::kRunning)).ok());  // not touched

  auto ids = store_->MarkUnfinishedInterrupted();
  ASSERT_TRUE(ids.ok()) << ids.error();
  EXPECT_THAT(ids->interrupted, ElementsAre("queued", "running"));  // oldest first
  EXPECT_TRUE(ids->requeued.empty());

  for (const char* id : {"queued", "running"}) {
    auto e = store_->GetExperiment(id);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->state, ExperimentState::kInterrupted);
    EXPECT_EQ(e->error, "controller stopped while the experiment ran");
    EXPECT_EQ(e->finished_unix_ms, 0);
  }
  EXPECT_EQ(store_->GetExperiment("done")->state, ExperimentState::kDone);
  EXPECT_EQ(store_->GetExperiment("failed")->state, ExperimentState::kFailed);

  auto trials = store_->GetTrials("running");
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ((*trials)[0].state, TrialState::kDone);
  EXPECT_EQ((*trials)[1].state, TrialState::kCancelled);
  EXPECT_FALSE((*trials)[1].error.empty());
  EXPECT_EQ((*trials)[2].state, TrialState::kPending);
  EXPECT_EQ((*store_->GetTrials("done"))[0].state, TrialState::kRunning);

  auto none = store_->MarkUnfinishedInterrupted();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->interrupted.empty());
  EXPECT_TRUE(none->requeued.empty());
}

// Two `codlctl run` on one file: the second one's start must not mark the first one's running
// experiment interrupted; what a dead process (or a row older than owners) left is.
TEST_F(StoreTest, MarkUnfinishedInterruptedLeavesALiveOwnersExperimentsAlone) {
  for (const char* id : {"live", "dead", "old", "mine"}) {
    ASSERT_TRUE(store_->CreateExperiment(MakeExperiment(id, 1, ExperimentState::kRunning)).ok());
  }
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("queued", 2, ExperimentState::kQueued)).ok());
  const std::string parent = ProcessTokenOf(static_cast<long>(getppid()));
  ASSERT_FALSE(parent.empty());
  ASSERT_TRUE(ProcessTokenAlive(parent));
  pid_t child = fork();
  if (child == 0) _exit(0);
  const std::string child_token = ProcessTokenOf(child);  // read while it is a zombie at most
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  ASSERT_FALSE(child_token.empty());
  EXPECT_FALSE(ProcessTokenAlive(child_token));
  ExecRaw(path_, "UPDATE experiments SET owner = '" + parent + "' WHERE id = 'live'");
  ExecRaw(path_, "UPDATE experiments SET owner = '" + child_token + "' WHERE id = 'dead'");
  ExecRaw(path_, "UPDATE experiments SET owner = '' WHERE id = 'old'");
  ExecRaw(path_, "UPDATE experiments SET owner = 'otherhost x 1 1' WHERE id = 'queued'");

  auto marked = store_->MarkUnfinishedInterrupted(/*keep_queued=*/true);
  ASSERT_TRUE(marked.ok()) << marked.error();
  EXPECT_THAT(marked->interrupted, ElementsAre("dead", "old", "mine"));
  EXPECT_THAT(marked->requeued, ElementsAre("queued"));
  EXPECT_EQ(store_->GetExperiment("live")->state, ExperimentState::kRunning);
  EXPECT_EQ(store_->GetExperiment("queued")->state, ExperimentState::kQueued);
  EXPECT_EQ(QueryText(path_, "SELECT owner FROM experiments WHERE id = 'queued'"),
            ThisProcessToken());
}

TEST_F(StoreTest, CalibrationRoundTripsAndIsReplacedByKey) {
  auto missing = store_->GetCalibration("n1", "memcpy", "threads=2");
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_FALSE(missing->has_value());

  CalibrationRecord c{"n1",      "memcpy", "threads=2",   2.3456789012345678e10,
                      "bytes/s", 3.25,     1700000000001, "5be1c0d3a9e47f21"};
  ASSERT_TRUE(store_->PutCalibration(c).ok());
  CalibrationRecord other{"n1", "io_uring", "bs=1MiB,mode=randread,qd=32", 1.1e5, "IOPS", 5, 9, ""};
  ASSERT_TRUE(store_->PutCalibration(other).ok());
  c.peak_rate = 2.5e10;
  c.duration_s = 6.5;
  c.measured_unix_ms = 1700000000002;
  ASSERT_TRUE(store_->PutCalibration(c).ok());  // same key: replaces

  auto got = store_->GetCalibration("n1", "memcpy", "threads=2");
  ASSERT_TRUE(got.ok() && got->has_value());
  const CalibrationRecord& g = **got;
  EXPECT_EQ(g.node, c.node);
  EXPECT_EQ(g.injector, c.injector);
  EXPECT_EQ(g.options_key, c.options_key);
  EXPECT_SAME_DOUBLE(g.peak_rate, c.peak_rate);
  EXPECT_EQ(g.unit, c.unit);
  EXPECT_SAME_DOUBLE(g.duration_s, c.duration_s);
  EXPECT_EQ(g.measured_unix_ms, c.measured_unix_ms);
  EXPECT_EQ(g.node_fingerprint, c.node_fingerprint);

  auto list = store_->ListCalibrations();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].injector, "io_uring");
  EXPECT_EQ((*list)[1].injector, "memcpy");
}

TEST_F(StoreTest, LargeTrialSavesQuickly) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  TrialRecord t = MakeTrial("e1", 0, /*steps=*/5000, /*antagonists=*/8, /*samples=*/2500);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(store_->SaveTrial(t).ok());
  double save_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  auto got = store_->GetTrials("e1");
  double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(got.ok()) << got.error();
  ExpectSameTrial((*got)[0], t);
  std::printf("5000 steps + 20000 samples: save %.3f s, read %.3f s\n", save_s, read_s);
  EXPECT_LT(save_s, 5.0);  // ~0.1 s expected; generous for loaded CI machines
}

TEST_F(StoreTest, ConcurrentCallsOnOneStoreAreSerialized) {
  ASSERT_TRUE(store_->CreateExperiment(MakeExperiment("e1", 1)).ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 20; ++i) {
        if (!store_->SaveTrial(MakeTrial("e1", w * 100 + i, 10, 1, 10)).ok()) ++failures;
        if (!store_->GetTrials("e1", false).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store_->GetTrials("e1")->size(), 80u);
}

TEST(StoreOpenTest, ErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string missing_dir = dir.File("no/such/dir/results.db");
  auto a = Store::Open(missing_dir);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.error(), HasSubstr(missing_dir));

  const std::string text = dir.File("not-a-db.txt");
  std::ofstream(text) << "this is not a database, just some text that is long enough.........\n"
                      << std::string(4096, 'x');
  auto b = Store::Open(text);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.error(), HasSubstr(text));
  EXPECT_THAT(b.error(), HasSubstr("not a database"));

  EXPECT_FALSE(Store::Open("").ok());
}

TEST(StoreOpenTest, RefusesAnotherApplicationsDatabaseWithoutTouchingIt) {
  testing::TempDir dir;
  const std::string other = dir.File("other.db");
  testing::ExecRaw(other, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('hello');");
  auto s = Store::Open(other);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error(), HasSubstr(other));
  EXPECT_THAT(s.error(), HasSubstr("not a CoDL results database"));
  EXPECT_EQ(QueryText(other, "PRAGMA journal_mode"), "delete");  // not switched to WAL
  EXPECT_EQ(QueryInt(other, "SELECT count(*) FROM sqlite_master WHERE name = 'trials'"), 0);
}

TEST(PhasesJsonTest, RoundTripsExactlyIncludingNonFinite) {
  std::map<std::string, double> phases = {
      {"a", 0.1},        {"b", 1.0 / 3},      {"c", 5e-324},     {"d", 1.7976931348623157e308},
      {"e", -2.5e-17},   {"f", 123456789.0},  {"g", 0},          {"nan", std::nan("")},
      {"inf", INFINITY}, {"ninf", -INFINITY}, {"uni ✓ \"q\"", 2}};
  auto text = EncodePhases(phases);
  ASSERT_TRUE(text.ok()) << text.error();
  auto back = DecodePhases(*text);
  ASSERT_TRUE(back.ok()) << back.error();
  testing::ExpectSamePhases(*back, phases);
  EXPECT_EQ(*EncodePhases({}), "{}");
  EXPECT_FALSE(DecodePhases("[1,2]").ok());
  EXPECT_FALSE(DecodePhases("{\"a\": true}").ok());
  EXPECT_FALSE(DecodePhases("{not json").ok());
  EXPECT_FALSE(EncodePhases({{"\xff", 1.0}}).ok());  // not UTF-8: refused, not thrown
}

}  // namespace
}  // namespace codl::store
