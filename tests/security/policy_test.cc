// Security issue, item 5 (policy on the real load, dead-man gaps): one regression test per
// audit finding. A stand-in codl-inject script plays the injector.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/agent_service.h"
#include "agent/antagonist_manager.h"
#include "agent/lease_monitor.h"
#include "agent/progress_parser.h"
#include "agent/telemetry_hub.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/rpc_util.h"
#include "lib/rpc/unix_listener.h"

namespace codl::agent {
namespace {

v1::StartAntagonistRequest Rate(double rate, double level = 0) {
  v1::StartAntagonistRequest r;
  r.mutable_spec()->set_injector("memcpy");
  r.mutable_spec()->set_rate(rate);
  r.set_level(level);
  return r;
}

v1::StartAntagonistRequest Max(double level) {
  v1::StartAntagonistRequest r;
  r.mutable_spec()->set_injector("memcpy");
  r.mutable_spec()->set_max(true);
  r.set_level(level);
  return r;
}

// Finding: max_level checked the number the client sent: absolute rates arrived as level 0 and
// `max` with level 0 or NaN was accepted.
TEST(MaxLevelPolicy, AppliesToTheLoadThatWouldRun) {
  AgentPolicy p;
  p.max_level = 0.5;
  EXPECT_EQ(CheckStartRequest(Max(0), p, 100.0).code(), StatusCode::kPermissionDenied)
      << "max is full intensity whatever level the client names";
  EXPECT_EQ(CheckStartRequest(Max(std::nan("")), p, 100.0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckStartRequest(Rate(80), p, 100.0).code(), StatusCode::kPermissionDenied)
      << "rate 80 of a calibrated peak of 100 is level 0.8";
  EXPECT_TRUE(CheckStartRequest(Rate(40), p, 100.0).ok());
  EXPECT_EQ(CheckStartRequest(Rate(40), p, std::nullopt).code(), StatusCode::kPermissionDenied)
      << "without a calibration an absolute rate cannot be shown to be within max_level";
  EXPECT_EQ(CheckStartRequest(Rate(40, 0.9), p, 100.0).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckStartRequest(Rate(INFINITY), p, 100.0).code(), StatusCode::kInvalidArgument);
  auto lease = Rate(40);
  lease.set_lease_s(0.001);
  EXPECT_EQ(CheckStartRequest(lease, p, 100.0).code(), StatusCode::kInvalidArgument);
  auto timeout = Rate(40);
  timeout.set_start_timeout_s(-1);
  EXPECT_EQ(CheckStartRequest(timeout, p, 100.0).code(), StatusCode::kInvalidArgument);
  timeout.set_start_timeout_s(NAN);
  EXPECT_EQ(CheckStartRequest(timeout, p, 100.0).code(), StatusCode::kInvalidArgument);
  p.max_level = 1;
  EXPECT_TRUE(CheckStartRequest(Max(0), p, std::nullopt).ok());
  EXPECT_TRUE(CheckStartRequest(Rate(1e9), p, std::nullopt).ok());
}

class AgentPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/codl-sec-policy.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // --calibrate: runs until stopped (a long calibration); anything else: idles.
    fake_ = dir_ + "/fake-inject";
    std::ofstream(fake_) << "#!/bin/sh\n"
                            "trap 'exit 3' TERM\n"
                            "while :; do sleep 0.05; done\n";
    chmod(fake_.c_str(), 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  AntagonistManager Manager(const LeaseMonitor* lease, const Clock* clock) {
    AntagonistPolicy p;
    p.inject_binary = fake_;
    return AntagonistManager(std::move(p), lease, clock);
  }
  std::string dir_, fake_;
};

// Finding: calibrations were not under StopAll, the lease or the leftovers file.
TEST_F(AgentPolicyTest, CalibrationIsAnAntagonist) {
  LeaseMonitor lease(SystemClock::Get());
  auto m = Manager(&lease, SystemClock::Get());
  auto calibration = std::async(std::launch::async, [&] { return m.Calibrate("noop", {}, 60); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (m.Children().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(m.Children().size(), 1u) << "the leftovers file lists the calibration";
  EXPECT_EQ(m.Running(), 1);
  EXPECT_EQ(m.StopAll("test"), 1);
  auto c = calibration.get();
  EXPECT_FALSE(c.ok()) << "a stopped calibration reports no peak";
  EXPECT_TRUE(m.Children().empty());
}

// Finding: any accepted call renewed the lease, so a client polling GetAntagonist kept
// antagonists alive with the controller gone.
TEST_F(AgentPolicyTest, OnlyHeartbeatsRenewTheLease) {
  FakeClock clock;
  LeaseMonitor lease(&clock);
  auto m = Manager(&lease, &clock);
  TelemetryHub hub;
  AgentServiceImpl service(&m, &clock, AgentPolicy{}, &hub);
  auto started = rpc::StartServer(rpc::Endpoint{"127.0.0.1:0", {}, true}, {&service}, "test");
  ASSERT_TRUE(started.ok()) << started.error();
  auto ch = rpc::MakeChannel(rpc::Endpoint{started->address, {}, true});
  ASSERT_TRUE(ch.ok());
  auto stub = v1::Agent::NewStub(*ch);
  clock.Advance(30);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext c;
    v1::GetAntagonistRequest req;
    req.set_antagonist_id("none");
    v1::GetAntagonistReply rep;
    stub->GetAntagonist(&c, req, &rep);
    grpc::ClientContext c2;
    v1::StopAllRequest sreq;
    v1::StopAllReply srep;
    EXPECT_TRUE(stub->StopAll(&c2, sreq, &srep).ok());
  }
  EXPECT_GE(lease.SecondsSinceContact(), 30) << "calls other than heartbeats renewed the lease";
  started->server->Shutdown(std::chrono::system_clock::now());
  service.Shutdown();
  started->server->Wait();
}

// Finding: a few long RunVictim calls starved every other handler (they ran on the shared pool
// of 16). Twenty slow victims at once: at most 8 run (the rest are refused at once), and StopAll
// still answers promptly.
TEST_F(AgentPolicyTest, SlowVictimsDoNotStallStopAll) {
  LeaseMonitor lease(SystemClock::Get());
  auto m = Manager(&lease, SystemClock::Get());
  TelemetryHub hub;
  AgentServiceImpl service(&m, SystemClock::Get(), AgentPolicy{}, &hub);
  auto started = rpc::StartServer(rpc::Endpoint{"127.0.0.1:0", {}, true}, {&service}, "test");
  ASSERT_TRUE(started.ok()) << started.error();
  auto ch = rpc::MakeChannel(rpc::Endpoint{started->address, {}, true});
  ASSERT_TRUE(ch.ok());
  auto stub = v1::Agent::NewStub(*ch);
  std::vector<std::future<grpc::StatusCode>> victims;
  for (int i = 0; i < 20; ++i) {
    victims.push_back(std::async(std::launch::async, [&stub, i] {
      grpc::ClientContext c;
      v1::RunVictimRequest req;
      req.set_idempotency_key("v" + std::to_string(i));
      req.mutable_victim()->add_command("sleep");
      req.mutable_victim()->add_command("2");
      req.mutable_victim()->mutable_progress()->set_format(v1::VictimProgress::WALL);
      req.mutable_victim()->set_timeout_s(30);
      v1::RunVictimReply rep;
      return stub->RunVictim(&c, req, &rep).error_code();
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the victims arrive
  const auto t0 = std::chrono::steady_clock::now();
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::StopAllRequest req;
  v1::StopAllReply rep;
  EXPECT_TRUE(stub->StopAll(&c, req, &rep).ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  int ok = 0, refused = 0;
  for (auto& v : victims) {
    auto code = v.get();
    ok += code == grpc::StatusCode::OK;
    refused += code == grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  EXPECT_LE(ok, 8);
  EXPECT_EQ(ok + refused, 20);
  started->server->Shutdown(std::chrono::system_clock::now());
  service.Shutdown();
  started->server->Wait();
}

// Issue "Security, third pass", item 1: calls in progress are capped per identity on a TCP
// listener with tokens (the unix socket also caps connections per uid). Three slow victims of
// one caller under max_calls_per_caller 2: the third is refused naming the cap, an admin goes on
// meanwhile, and once the two end the caller may call again.
TEST_F(AgentPolicyTest, CallsInProgressAreCappedPerIdentity) {
  const rpc::ConnectionLimits saved = rpc::CurrentConnectionLimits();
  rpc::ConnectionLimits caps = saved;
  caps.calls_per_caller = 2;
  rpc::SetConnectionLimits(caps);
  auto tokens = rpc::TokenTable::Parse("controller - " + rpc::Sha256Hex("ctl-token") +
                                           "\nadmin ops " + rpc::Sha256Hex("admin-token") + "\n",
                                       "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error();
  LeaseMonitor lease(SystemClock::Get());
  auto m = Manager(&lease, SystemClock::Get());
  TelemetryHub hub;
  AgentServiceImpl service(&m, SystemClock::Get(), AgentPolicy{}, &hub);
  auto started = rpc::StartServer(rpc::Endpoint{"127.0.0.1:0", {}, true}, {&service}, "test",
                                  std::make_shared<const rpc::TokenTable>(std::move(*tokens)));
  ASSERT_TRUE(started.ok()) << started.error();
  auto ch = rpc::MakeChannel(rpc::Endpoint{started->address, {}, true});
  ASSERT_TRUE(ch.ok());
  auto stub = v1::Agent::NewStub(*ch);
  auto victim = [&stub](int i, double sleep_s) {
    grpc::ClientContext c;
    c.AddMetadata("authorization", "Bearer ctl-token");
    v1::RunVictimRequest req;
    req.set_idempotency_key("c" + std::to_string(i));
    req.mutable_victim()->add_command("sleep");
    req.mutable_victim()->add_command(std::to_string(sleep_s));
    req.mutable_victim()->mutable_progress()->set_format(v1::VictimProgress::WALL);
    req.mutable_victim()->set_timeout_s(30);
    v1::RunVictimReply rep;
    return stub->RunVictim(&c, req, &rep);
  };
  auto counted = [](size_t n) {
    for (int i = 0; i < 250; ++i) {
      const auto c = rpc::CallsInProgressByCaller();
      if ((c.count("controller") ? c.at("controller") : 0) == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  auto a = std::async(std::launch::async, [&] { return victim(1, 2).error_code(); });
  auto b = std::async(std::launch::async, [&] { return victim(2, 2).error_code(); });
  ASSERT_TRUE(counted(2)) << "the two slow victims are in progress";
  const grpc::Status third = victim(3, 0.01);
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(third.error_message().find("controller already has 2 calls in progress "
                                       "(max_calls_per_caller 2)"),
            std::string::npos)
      << third.error_message();
  {
    grpc::ClientContext c;
    c.AddMetadata("authorization", "Bearer admin-token");
    v1::GetAntagonistRequest req;
    req.set_antagonist_id("none");
    v1::GetAntagonistReply rep;
    EXPECT_NE(stub->GetAntagonist(&c, req, &rep).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << "an admin is not counted";
  }
  EXPECT_EQ(a.get(), grpc::StatusCode::OK);
  EXPECT_EQ(b.get(), grpc::StatusCode::OK);
  EXPECT_TRUE(counted(0)) << "ended calls are no longer counted";
  EXPECT_TRUE(victim(4, 0.01).ok()) << "the caller may call again";
  rpc::SetConnectionLimits(saved);
  started->server->Shutdown(std::chrono::system_clock::now());
  service.Shutdown();
  started->server->Wait();
}

// Item 3: a victim's output is bounded before it reaches memory and the RunVictim reply (lines
// were already capped at 1 MiB by ChildProcess; steps and phases per step were not).
TEST(VictimOutputBounds, StepsAndPhasesAreCapped) {
  experiment::ProgressSpec spec;  // jsonl, step_time_s
  ProgressParser parser(spec, 0);
  std::string phases = "{";
  for (int i = 0; i < 500; ++i) phases += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":0.1";
  phases += "}";
  parser.OnStdoutLine("{\"step_time_s\":0.5,\"phases\":" + phases + "}", 0);
  const size_t extra = 1000;
  for (size_t i = 1; i < ProgressParser::kMaxSteps + extra; ++i) {
    parser.OnStdoutLine("{\"step_time_s\":0.5}", static_cast<double>(i));
  }
  auto out = parser.Finish(0, false, 1, "");
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_EQ(out.steps.size(), ProgressParser::kMaxSteps);
  EXPECT_EQ(out.dropped_steps, static_cast<int64_t>(extra));
  EXPECT_EQ(out.steps.front().phases.size(), ProgressParser::kMaxPhases);
}

}  // namespace
}  // namespace codl::agent
