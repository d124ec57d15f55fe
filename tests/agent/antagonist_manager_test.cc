// AntagonistManager acts on injector capabilities (injectors/injector.h), never on names: the
// victim_env line of an exports_victim_env injector (safe names only), and the rendezvous value
// fetched for a non-zero rank of a collective one. A stand-in codl-inject script plays the
// injector, so no GPU is needed.
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
