// AntagonistManager (and the InjectChild of each antagonist) acts on injector capabilities
// (injectors/core/injector.h), never on names: the victim_env record of an exports_victim_env
// injector (safe names only), the rendezvous value fetched for a non-zero rank of a collective
// one and rank 0's relayed; and it reads codl-inject's protocol records (start account, summary)
// for runs and calibrations alike. A stand-in codl-inject script plays the injector, so no GPU
// is needed.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/antagonist_manager.h"
#include "agent/lease_monitor.h"

namespace codl::agent {
namespace {

class AntagonistManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/codl-am-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Prints one victim_env line (one safe name, one that must never be exported) and its argv,
    // then idles until stopped.
    fake_ = dir_ + "/fake-inject";
    std::ofstream(fake_) << "#!/bin/sh\n"
                            "echo \"$*\" > "
                         << dir_
                         << "/argv.txt\n"
                            "echo '{\"victim_env\":{\"CUDA_MPS_PIPE_DIRECTORY\":\"/p\","
                            "\"LD_PRELOAD\":\"/evil.so\"}}'\n"
                            "echo '{\"t_s\":0.1,\"achieved\":1,\"target\":0,\"unit\":\"u\"}'\n"
                            "trap 'exit 0' TERM\n"
                            "while :; do sleep 0.05; done\n";
    chmod(fake_.c_str(), 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Replaces the stand-in by one that writes `lines` (after its argv), then idles until stopped
  // (`idle`) or exits with `exit_code`.
  void Fake(const std::vector<std::string>& lines, bool idle = true, int exit_code = 0) {
    std::ofstream out(fake_);
    out << "#!/bin/sh\necho \"$*\" > " << dir_ << "/argv.txt\n";
    for (const auto& l : lines) out << "echo '" << l << "'\n";
    if (idle) {
      out << "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n";
    } else {
      out << "echo 'oops on stderr' >&2\nexit " << exit_code << "\n";
    }
  }

  AntagonistManager Manager(RendezvousRelay relay = {}) {
    AntagonistPolicy p;
    p.inject_binary = fake_;
    p.relay = std::move(relay);
    return AntagonistManager(std::move(p), &lease_, SystemClock::Get());
  }

  // What the stand-in was started with, once it has written it (bounded wait for the child).
  std::string Argv() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(dir_ + "/argv.txt");
      std::string line;
      if (std::getline(in, line) && !line.empty()) return line;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }

  static InjectorRequest Request(const std::string& injector,
                                 std::map<std::string, std::string> options = {}) {
    InjectorRequest r;
    r.injector = injector;
    r.options = std::move(options);
    r.max = true;
    return r;
  }

  std::string dir_, fake_;
  LeaseMonitor lease_{SystemClock::Get()};
};

// Polls until the manager has read the sample that follows the victim_env line (lines are
// handled in order), so the env line has been acted on (or 10 s pass).
bool LinesRead(const AntagonistManager& m, const std::string& id) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto snap = m.Get(id);
    if (snap.ok() && snap->samples > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Polls until the manager has taken the victim_env line (or 10 s pass).
std::map<std::string, std::string> EnvOnceSet(const AntagonistManager& m) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto env = m.VictimEnvironment();
    if (!env.empty()) return env;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

TEST_F(AntagonistManagerTest, ExportsSafeVictimEnvOfAnInjectorThatDeclaresIt) {
  auto m = Manager();
  ASSERT_TRUE(m.Start("a", Request("mps_cotenant"), 30).ok());
  const auto env = EnvOnceSet(m);
  EXPECT_EQ(env.size(), 1u);
  EXPECT_EQ(env.count("LD_PRELOAD"), 0u);
  ASSERT_EQ(env.count("CUDA_MPS_PIPE_DIRECTORY"), 1u);
  EXPECT_EQ(env.at("CUDA_MPS_PIPE_DIRECTORY"), "/p");
}

TEST_F(AntagonistManagerTest, IgnoresVictimEnvOfAnInjectorThatDoesNotDeclareIt) {
  auto m = Manager();
  ASSERT_TRUE(m.Start("a", Request("noop"), 30).ok());
  ASSERT_TRUE(LinesRead(m, "a"));
  EXPECT_TRUE(m.VictimEnvironment().empty());
}

TEST_F(AntagonistManagerTest, NonZeroRankOfACollectiveGetsTheRendezvousValue) {
  std::string fetched_key;
  RendezvousRelay relay;
  relay.fetch = [&](const std::string& key, double) -> Result<std::string> {
    fetched_key = key;
    return std::string("\x01\xab", 2);
  };
  auto m = Manager(relay);
  // nccl is collective with rendezvous_option "unique_id".
  ASSERT_TRUE(m.Start("a",
                      Request("nccl", {{"ranks", "2"}, {"rank", "1"}, {"rendezvous_key", "t1/bg"}}),
                      30)
                  .ok());
  EXPECT_EQ(fetched_key, "t1/bg");
  EXPECT_NE(Argv().find("--set unique_id=01ab"), std::string::npos) << Argv();
}

// A collective's ranks are calibrated together (controller: CalibrateCollective), so a non-zero
// rank's calibration fetches rank 0's value first, as its start does (it never did: rank 1 was
// never started and rank 0 waited out its init_timeout; found on gpusim).
TEST_F(AntagonistManagerTest, ANonZeroRanksCalibrationGetsTheRendezvousValue) {
  Fake({R"({"summary":true,"injector":"nccl","unit":"busbw bytes/s","mode":"calibrate",)"
        R"("target_rate":0,"achieved_rate":2e7,"peak_rate":2e7,"cov":0,"seconds":1,)"
        R"("saturated":false,"stopped_by_signal":false})"},
       /*idle=*/false, /*exit_code=*/0);
  std::string fetched_key;
  RendezvousRelay relay;
  relay.fetch = [&](const std::string& key, double) -> Result<std::string> {
    fetched_key = key;
    return std::string("\x01\xab", 2);
  };
  auto m = Manager(relay);
  auto c = m.Calibrate("nccl", {{"ranks", "2"}, {"rank", "1"}, {"rendezvous_key", "cal/ar"}}, 1);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(fetched_key, "cal/ar");
  EXPECT_NE(Argv().find("--set unique_id=01ab"), std::string::npos) << Argv();
  EXPECT_DOUBLE_EQ(c->peak_rate, 2e7);
}

TEST_F(AntagonistManagerTest, NonCollectiveInjectorsGetNoRendezvous) {
  bool fetched = false;
  RendezvousRelay relay;
  relay.fetch = [&](const std::string&, double) -> Result<std::string> {
    fetched = true;
    return std::string("x");
  };
  auto m = Manager(relay);
  ASSERT_TRUE(m.Start("a", Request("noop", {{"rank", "1"}, {"rendezvous_key", "k"}}), 30).ok());
  EXPECT_FALSE(fetched);
  EXPECT_EQ(Argv().find("unique_id"), std::string::npos) << Argv();
}

// A synchronized start: codl-inject's account of it (started line, first-load line) reaches the
// start's and the stop's results, and the agent learns the measured setup: the next estimate for
// the same injector and options is at least kLearnedSetupMargin x that setup.
TEST_F(AntagonistManagerTest, ForwardsTheStartAccountAndLearnsTheMeasuredSetup) {
  std::ofstream(fake_) << "#!/bin/sh\n"
                          "echo \"$*\" > "
                       << dir_
                       << "/argv.txt\n"
                          "echo '{\"started_unix_ns\":5000,\"start_at_unix_ns\":4990,"
                          "\"ready_unix_ns\":4000,\"setup_s\":2.5,\"setup_estimate_s\":0}'\n"
                          "echo '{\"first_load_unix_ns\":5100,\"first_done_unix_ns\":5300}'\n"
                          "echo '{\"t_s\":0.2,\"achieved\":1,\"target\":0,\"unit\":\"u\"}'\n"
                          "trap 'exit 0' TERM\n"
                          "while :; do sleep 0.05; done\n";
  auto m = Manager();
  const std::map<std::string, std::string> options = {{"threads", "2"}};
  ASSERT_EQ(*m.EstimateSetupS("noop", options), 0) << "noop's own estimate, nothing learned yet";
  InjectorRequest req = Request("noop", options);
  req.start_at_unix_ns = SystemClock::Get()->UnixNanos() + 60'000'000'000LL;  // deferred start
  auto started = m.Start("a", req, 30);
  ASSERT_TRUE(started.ok()) << started.error();
  EXPECT_EQ(started->started_unix_ns, 5000);
  EXPECT_EQ(started->ready_unix_ns, 4000);
  EXPECT_DOUBLE_EQ(started->setup_s, 2.5);
  EXPECT_NE(Argv().find("--start-at"), std::string::npos) << Argv();

  EXPECT_DOUBLE_EQ(*m.EstimateSetupS("noop", options), 2.5 * 1.2);
  EXPECT_EQ(*m.EstimateSetupS("noop", {{"threads", "3"}}), 0) << "other options: not learned";

  ASSERT_TRUE(LinesRead(m, "a"));  // the sample after the first-load line
  auto final = m.Stop("a");
  ASSERT_TRUE(final.ok()) << final.error();
  EXPECT_EQ(final->first_load_unix_ns, 5100);
  EXPECT_EQ(final->first_done_unix_ns, 5300);
}

// Rank 0 of a collective publishes raw bytes (hex on the wire); the agent relays the bytes.
TEST_F(AntagonistManagerTest, RelaysRankZerosRendezvousAsBytes) {
  Fake({R"({"rendezvous_publish":{"key":"t1/bg","value_hex":"01ab"}})",
        R"({"t_s":0.1,"achieved":1,"target":0,"unit":"u"})"});
  std::string key, value;
  RendezvousRelay relay;
  relay.publish = [&](const std::string& k, const std::string& v) {
    key = k;
    value = v;
    return Status::Ok();
  };
  auto m = Manager(relay);
  ASSERT_TRUE(m.Start("a",
                      Request("nccl", {{"ranks", "2"}, {"rank", "0"}, {"rendezvous_key", "t1/bg"}}),
                      30)
                  .ok());
  ASSERT_TRUE(LinesRead(m, "a"));
  EXPECT_EQ(key, "t1/bg");
  EXPECT_EQ(value, std::string("\x01\xab", 2));
  EXPECT_EQ(m.Get("a")->error, "");
}

// A rendezvous record the agent cannot read leaves the other ranks waiting: the antagonist fails.
TEST_F(AntagonistManagerTest, ABrokenRendezvousRecordFailsTheAntagonist) {
  Fake({R"({"rendezvous_publish":{"key":"k","value_hex":"0g"}})",
        R"({"t_s":0.1,"achieved":1,"target":0,"unit":"u"})"});
  bool published = false;
  RendezvousRelay relay;
  relay.publish = [&](const std::string&, const std::string&) {
    published = true;
    return Status::Ok();
  };
  auto m = Manager(relay);
  ASSERT_TRUE(m.Start("a", Request("nccl"), 30).ok());
  ASSERT_TRUE(LinesRead(m, "a"));
  EXPECT_FALSE(published);
  EXPECT_EQ(m.Get("a")->error,
            "rendezvous_publish record: value_hex: invalid hex character 'g' at offset 1");
  auto final = m.Stop("a");
  ASSERT_TRUE(final.ok());
  EXPECT_EQ(final->error,
            "rendezvous_publish record: value_hex: invalid hex character 'g' at offset 1");
}

// The summary record, not the samples, is what a stopped run achieved; other text is skipped.
TEST_F(AntagonistManagerTest, StopReportsTheSummaryRecord) {
  Fake({"codl-inject noop (max): human text is not a record",
        R"({"t_s":0.2,"achieved":10,"target":20,"unit":"units/s","phase":"run","saturated":false})",
        R"({"summary":true,"injector":"noop","unit":"units/s","mode":"rate","target_rate":20,)"
        R"("achieved_rate":19.5,"peak_rate":0,"cov":0.03,"seconds":1,"saturated":false,)"
        R"("stopped_by_signal":false})"});
  auto m = Manager();
  InjectorRequest req = Request("noop");
  req.max = false;
  req.rate = 20;
  ASSERT_TRUE(m.Start("a", req, 30).ok());
  ASSERT_TRUE(LinesRead(m, "a"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the summary follows
  auto final = m.Stop("a");
  ASSERT_TRUE(final.ok()) << final.error();
  EXPECT_TRUE(final->have_summary);
  EXPECT_DOUBLE_EQ(final->achieved_rate, 19.5);
  EXPECT_DOUBLE_EQ(final->target_rate, 20);
  EXPECT_DOUBLE_EQ(final->cov, 0.03);
  EXPECT_EQ(final->unit, "units/s");
  ASSERT_EQ(final->samples.size(), 1u);
  EXPECT_DOUBLE_EQ(final->samples[0].achieved, 10);
  EXPECT_EQ(final->error, "");
  EXPECT_EQ(m.Get("a").code(), StatusCode::kNotFound) << "forgotten once stopped";
}

// A resumed study re-runs a cut-off trial under the same antagonist id. The lease stopped the
// old process while the controller was down; its entry, ended, must not refuse the new attempt
// ("already running": the trial was lost for good, recorded as a victim failure). A live one
// still refuses, with its code.
TEST_F(AntagonistManagerTest, AStartReplacesAnEntryWhoseProcessEndedUnderTheLease) {
  auto m = Manager();
  ASSERT_TRUE(m.Start("e1-t3-membw-n1", Request("noop"), /*lease_s=*/0.2).ok());
  ASSERT_TRUE(LinesRead(m, "e1-t3-membw-n1"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // no contact since the start
  EXPECT_EQ(m.EnforceLeases(), 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (m.Running() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(m.Running(), 0) << "the lease did not stop it";
  lease_.Renew();  // the controller is back
  auto again = m.Start("e1-t3-membw-n1", Request("noop"), 30);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(m.Running(), 1);
  auto twice = m.Start("e1-t3-membw-n1", Request("noop"), 30);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.code(), StatusCode::kAlreadyExists) << twice.error();
  EXPECT_TRUE(m.Stop("e1-t3-membw-n1").ok());
}

// A calibration is the same child: its summary's achieved rate is the peak, remembered per
// injector; a run without a summary, or a failed one, is an error naming how it ended.
TEST_F(AntagonistManagerTest, CalibrationTakesThePeakFromTheSummary) {
  Fake({R"({"t_s":0.2,"achieved":5,"target":0,"unit":"units/s","phase":"calibrate"})",
        R"({"summary":true,"injector":"noop","unit":"units/s","mode":"calibrate",)"
        R"("target_rate":0,"achieved_rate":123.5,"peak_rate":123.5,"cov":0,"seconds":1,)"
        R"("saturated":false,"stopped_by_signal":false})"},
       /*idle=*/false, /*exit_code=*/0);
  auto m = Manager();
  auto c = m.Calibrate("noop", {{"threads", "2"}}, 1);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_DOUBLE_EQ(c->peak_rate, 123.5);
  EXPECT_EQ(c->unit, "units/s");
  EXPECT_EQ(m.CalibratedPeak("noop"), 123.5);
  EXPECT_NE(Argv().find("noop --set threads=2 --json --calibrate --duration 1s"), std::string::npos)
      << Argv();
  EXPECT_EQ(m.Running(), 0) << "unregistered once done";

  Fake({R"({"t_s":0.2,"achieved":5,"target":0,"unit":"units/s"})"}, /*idle=*/false, 0);
  EXPECT_EQ(m.Calibrate("noop", {}, 1).error(),
            "calibrating noop: codl-inject exited with status 0: oops on stderr");
  Fake({}, /*idle=*/false, /*exit_code=*/1);
  EXPECT_EQ(m.Calibrate("noop", {}, 1).error(),
            "calibrating noop: codl-inject exited with status 1: oops on stderr");
  EXPECT_EQ(m.CalibratedPeak("noop"), 123.5) << "failures keep the last peak";
}

// A deferred start whose codl-inject fails during setup: the start says how it ended, and the
// antagonist is not left in the table.
TEST_F(AntagonistManagerTest, ADeferredStartThatFailsSaysHow) {
  Fake({}, /*idle=*/false, /*exit_code=*/1);
  auto m = Manager();
  InjectorRequest req = Request("noop");
  req.start_at_unix_ns = SystemClock::Get()->UnixNanos() + 60'000'000'000LL;
  auto started = m.Start("a", req, 30);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error(),
            "antagonist 'a': codl-inject did not start its load: exited with status 1: oops on "
            "stderr");
  EXPECT_EQ(m.Get("a").code(), StatusCode::kNotFound);
  EXPECT_EQ(m.GetStats().started, 1);
}

// The agent gives up on a start after the timeout the request carries (the controller derives
// its own deadline for the call from it), not after a constant of its own.
TEST_F(AntagonistManagerTest, GivesUpOnAStartAfterTheTimeoutTheRequestCarries) {
  auto m = Manager();
  InjectorRequest req = Request("noop", {});
  // Deferred: the stand-in never says that its load started.
  req.start_at_unix_ns = SystemClock::Get()->UnixNanos() + 60'000'000'000LL;
  req.start_timeout_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  auto started = m.Start("a", req, 30);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().find("no start within 0.5 s"), std::string::npos) << started.error();
  EXPECT_GE(took_s, 0.5);
  EXPECT_LT(took_s, 20) << "waited for the agent's default, not the request's timeout";
  EXPECT_EQ(m.Running(), 0) << "the child is killed when the start is given up";
}

}  // namespace
}  // namespace codl::agent
