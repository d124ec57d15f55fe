// Security issue, item 4 (integrity and bounds): one regression test per audit finding.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "codl/v1/controller.grpc.pb.h"
#include "controller/agent_registry.h"
#include "controller/controller_service.h"
#include "controller/experiment_runner.h"
#include "controller/experiment_scheduler.h"
#include "controller/rendezvous.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/rpc_util.h"
#include "lib/store/store.h"

namespace codl::controller {
namespace {

v1::AgentInfo Info(const std::string& id, const std::string& address) {
  v1::AgentInfo i;
  i.set_agent_id(id);
  i.set_address(address);
  return i;
}

AgentRegistry MakeRegistry(const Clock* clock, double dead_after_s = 5, double evict_after_s = 60,
                           size_t max_agents = 4096) {
  // Real clients, all on loopback (plaintext elsewhere is refused): the registry, not the
  // channel, is under test.
  auto factory = [grpc = GrpcAgentClientFactory({})](const std::string& id, const std::string&) {
    return grpc(id, "127.0.0.1:1");
  };
  return AgentRegistry(clock, factory, dead_after_s, evict_after_s, max_agents);
}

const PeerIdentity kAgentHost{"address", "ipv4:10.0.0.7"};
const PeerIdentity kAttacker{"address", "ipv4:10.0.0.66"};

// Finding: registering an existing agent id from another address replaced the live agent.
TEST(AgentRegistryIntegrity, LiveAgentCannotBeReRegisteredByAnotherIdentity) {
  FakeClock clock;
  auto r = MakeRegistry(&clock);
  ASSERT_TRUE(r.Register(Info("gpu-1", "10.0.0.7:7701"), kAgentHost).ok());
  Status hijack = r.Register(Info("gpu-1", "10.0.0.66:7701"), kAttacker);
  ASSERT_FALSE(hijack.ok());
  EXPECT_EQ(hijack.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(hijack.error().find("gpu-1"), std::string::npos) << hijack.error();
  EXPECT_EQ(r.List().at(0).address(), "10.0.0.7:7701") << "the live agent keeps its address";
  // Heartbeats from the other identity neither count nor keep the agent alive.
  EXPECT_FALSE(r.Heartbeat("gpu-1", 0.001, 0, 0, kAttacker));
  // The same identity at another address while the agent is alive: a second agent process
  // with this id (a clone), refused too; a restart takes over once the predecessor is silent.
  EXPECT_EQ(r.Register(Info("gpu-1", "10.0.0.7:7799"), kAgentHost).code(),
            StatusCode::kAlreadyExists);
  clock.Advance(6);
  EXPECT_TRUE(r.Register(Info("gpu-1", "10.0.0.7:7799"), kAgentHost).ok());
  EXPECT_TRUE(r.Heartbeat("gpu-1", 0.001, 0, 0, kAgentHost));
}

TEST(AgentRegistryIntegrity, DeadAgentMayMoveAndIsEvictedAfterTheBound) {
  FakeClock clock;
  auto r = MakeRegistry(&clock, /*dead_after_s=*/5, /*evict_after_s=*/60);
  ASSERT_TRUE(r.Register(Info("a", "10.0.0.7:1"), kAgentHost).ok());
  ASSERT_TRUE(r.Register(Info("b", "10.0.0.8:1"), {"address", "ipv4:10.0.0.8"}).ok());
  clock.Advance(10);  // both dead, not yet evicted
  EXPECT_EQ(r.List().size(), 2u);
  // A dead agent's id may be taken over (the agent moved to another host).
  EXPECT_TRUE(r.Register(Info("a", "10.0.0.9:1"), {"address", "ipv4:10.0.0.9"}).ok());
  clock.Advance(100);
  EXPECT_TRUE(r.Heartbeat("a", 0.001, 0, 0, {"address", "ipv4:10.0.0.9"}) == false)
      << "'a' was silent for 100 s > 60 s: evicted, told to re-register";
  EXPECT_TRUE(r.List().empty()) << "the registry does not grow without bound";
}

TEST(AgentRegistryIntegrity, AgentCapAndNonFiniteHeartbeatSamples) {
  FakeClock clock;
  auto r = MakeRegistry(&clock, 5, 60, /*max_agents=*/2);
  ASSERT_TRUE(r.Register(Info("a", "x:1")).ok());
  ASSERT_TRUE(r.Register(Info("b", "x:1")).ok());
  Status third = r.Register(Info("c", "x:1"));
  EXPECT_EQ(third.code(), StatusCode::kResourceExhausted) << third.error();
  EXPECT_TRUE(r.Heartbeat("a", std::nan(""), 1e300, -5));
  EXPECT_TRUE(r.Heartbeat("a", 0.002, 0.5, 1));
  EXPECT_DOUBLE_EQ(r.ClockOffset("a"), 0.5) << "a NaN sample never enters the clock filter";
  EXPECT_EQ(r.List().at(0).running_antagonists(), 1);
}

TEST(PeerIdentity, HostWithoutPortAndOneComparison) {
  EXPECT_EQ(PeerHost("ipv4:10.1.2.3:54321"), "ipv4:10.1.2.3");
  EXPECT_EQ(PeerHost("ipv6:[::1]:5"), "ipv6:[::1]");
  EXPECT_EQ(PeerHost("unix:/run/codl.sock"), "unix:/run/codl.sock");
  EXPECT_TRUE(SameIdentity({"address", "h"}, {"address", "h"}));
  EXPECT_FALSE(SameIdentity({"tls", "h"}, {"address", "h"}));
}

// Findings: rendezvous values were overwritable, unbounded and never expired.
TEST(RendezvousBounds, WriteOnceSizeCapsAndTtl) {
  FakeClock clock;
  RendezvousLimits lim;
  lim.max_value_bytes = 16;
  lim.max_entries = 2;
  lim.ttl_s = 30;
  Rendezvous rv(&clock, lim, /*sweep_thread=*/false);
  ASSERT_TRUE(rv.Publish("t1/nccl", "id-1").ok());
  EXPECT_TRUE(rv.Publish("t1/nccl", "id-1").ok()) << "a retried publish is fine";
  EXPECT_EQ(rv.Publish("t1/nccl", "evil").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(rv.Publish("t1/big", std::string(17, 'x')).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rv.Publish(std::string(600, 'k'), "v").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(rv.Publish("t1/other", "v").ok());
  EXPECT_EQ(rv.Publish("t1/third", "v").code(), StatusCode::kResourceExhausted);
  std::optional<std::string> got;
  ASSERT_TRUE(rv.Fetch("t1/nccl", 0, [&](auto v) { got = v; }).ok());
  EXPECT_EQ(got, "id-1");
  clock.Advance(31);
  rv.Sweep();
  EXPECT_EQ(rv.Entries(), 0u) << "values expire after the TTL";
  EXPECT_TRUE(rv.Publish("t1/nccl", "id-2").ok()) << "an expired key is free again";
}

TEST(RendezvousBounds, FetchWaitsWithoutAThreadAndEndsAtItsDeadline) {
  FakeClock clock;
  Rendezvous rv(&clock, {}, /*sweep_thread=*/false);
  int calls = 0;
  std::optional<std::string> got = "unset";
  ASSERT_TRUE(rv.Fetch("k", 5, [&](auto v) { ++calls, got = v; }).ok());
  EXPECT_EQ(calls, 0) << "Fetch returned at once; the callback waits";
  EXPECT_EQ(rv.Waiters(), 1u);
  std::optional<std::string> published;
  ASSERT_TRUE(rv.Fetch("p", 5, [&](auto v) { published = v; }).ok());
  ASSERT_TRUE(rv.Publish("p", "value").ok());
  EXPECT_EQ(published, "value");
  clock.Advance(6);
  rv.Sweep();
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(got.has_value());
  EXPECT_EQ(rv.Fetch("k", std::nan(""), [](auto) {}).code(), StatusCode::kInvalidArgument);
}

// Finding: rendezvous keys were predictable (experiment id, trial index, antagonist name), so a
// value could be planted before rank 0 published. Each trial's keys now carry 128 random bits.
TEST(RendezvousBounds, TrialScopesAreUnguessable) {
  const std::string a = NewRendezvousScope("20261130-101010-abcd-t3");
  const std::string b = NewRendezvousScope("20261130-101010-abcd-t3");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("20261130-101010-abcd-t3.", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("20261130-101010-abcd-t3.").size() + 32) << a;
}

// A controller on loopback: N slow FetchRendezvous calls, then GetExperiment and ListAgents must
// still answer promptly (the fetches once each held one of the service's 8 handler threads).
class ControllerServiceBounds : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("codl-sec-bounds-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    auto s = store::Store::Open((dir_ / "c.db").string());
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(s.value());
    agents_ = std::make_unique<AgentRegistry>(SystemClock::Get(), GrpcAgentClientFactory({}), 60);
    runner_ = std::make_unique<ExperimentRunner>(agents_.get(), store_.get(), SystemClock::Get());
    scheduler_ = std::make_unique<ExperimentScheduler>(
        store_.get(), runner_.get(), SystemClock::Get(), experiment::ParseHooks{});
    Serve(nullptr);
  }
  // (Re)starts the service on plaintext loopback, with `tokens` when given (else every caller
  // is admin and agents are told apart by address only).
  void Serve(std::shared_ptr<const rpc::TokenTable> tokens) {
    StopServing();
    service_ =
        std::make_unique<ControllerServiceImpl>(agents_.get(), scheduler_.get(), runner_.get(),
                                                store_.get(), SystemClock::Get(), ServiceConfig{});
    auto started = rpc::StartServer(rpc::Endpoint{"127.0.0.1:0", {}, true}, {service_.get()},
                                    "test", std::move(tokens));
    ASSERT_TRUE(started.ok()) << started.error();
    server_ = std::move(started->server);
    listener_ = std::move(started->listener);  // it accepts for the server: keep it
    auto ch = rpc::MakeChannel(rpc::Endpoint{started->address, {}, true});
    ASSERT_TRUE(ch.ok());
    stub_ = v1::Controller::NewStub(*ch);
  }
  void StopServing() {
    if (!server_) return;
    listener_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    service_->Shutdown();
    server_->Wait();
    server_.reset();
    service_.reset();
  }
  void TearDown() override {
    StopServing();
    scheduler_->Shutdown();
    std::filesystem::remove_all(dir_);
  }
  // Calls as `token` ("" : none).
  grpc::StatusCode Register(const std::string& id, const std::string& token = "") {
    grpc::ClientContext c;
    if (!token.empty()) c.AddMetadata("authorization", "Bearer " + token);
    v1::RegisterAgentRequest reg;
    *reg.mutable_agent() = Info(id, "127.0.0.1:1");
    v1::RegisterAgentReply rr;
    grpc::Status s = stub_->RegisterAgent(&c, reg, &rr);
    return s.error_code();
  }
  grpc::StatusCode Publish(const std::string& key, const std::string& token = "") {
    grpc::ClientContext c;
    if (!token.empty()) c.AddMetadata("authorization", "Bearer " + token);
    v1::PublishRendezvousRequest p;
    p.set_key(key);
    p.set_value("v");
    v1::PublishRendezvousReply pr;
    return stub_->PublishRendezvous(&c, p, &pr).error_code();
  }
  grpc::StatusCode Fetch(const std::string& key, const std::string& token = "") {
    grpc::ClientContext c;
    if (!token.empty()) c.AddMetadata("authorization", "Bearer " + token);
    v1::FetchRendezvousRequest f;
    f.set_key(key);
    v1::FetchRendezvousReply fr;
    return stub_->FetchRendezvous(&c, f, &fr).error_code();
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<AgentRegistry> agents_;
  std::unique_ptr<ExperimentRunner> runner_;
  std::unique_ptr<ExperimentScheduler> scheduler_;
  std::unique_ptr<ControllerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::Listener> listener_;
  std::unique_ptr<v1::Controller::Stub> stub_;
};

TEST_F(ControllerServiceBounds, SlowRendezvousFetchesDoNotStallStatus) {
  // Rendezvous calls come from registered agents: register this test's host as one.
  grpc::ClientContext rc;
  v1::RegisterAgentRequest reg;
  *reg.mutable_agent() = Info("me", "127.0.0.1:1");
  v1::RegisterAgentReply rr;
  ASSERT_TRUE(stub_->RegisterAgent(&rc, reg, &rr).ok());
  ScopedRendezvousGrant trial(&runner_->rendezvous_grants(), "t", {"me"});

  constexpr int kSlow = 32;  // four times the handler pool
  std::vector<std::thread> slow;
  std::atomic<int> finished{0};
  for (int i = 0; i < kSlow; ++i) {
    slow.emplace_back([&, i] {
      grpc::ClientContext c;
      c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      v1::FetchRendezvousRequest req;
      req.set_key("t/never-" + std::to_string(i));
      req.set_wait_s(3);
      v1::FetchRendezvousReply rep;
      EXPECT_TRUE(stub_->FetchRendezvous(&c, req, &rep).ok());
      EXPECT_FALSE(rep.found());
      ++finished;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the fetches arrive
  const auto t0 = std::chrono::steady_clock::now();
  grpc::ClientContext sc;
  sc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::GetExperimentRequest greq;
  v1::ExperimentStatus st;
  grpc::Status s = stub_->GetExperiment(&sc, greq, &st);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(took, 1.0) << "status waited behind the rendezvous fetches";
  EXPECT_LT(finished.load(), kSlow) << "the fetches were still waiting when status answered";
  for (auto& t : slow) t.join();
  EXPECT_EQ(finished.load(), kSlow);
}

TEST_F(ControllerServiceBounds, RendezvousFromANonAgentIsRefusedAndWriteOnce) {
  grpc::ClientContext c1;
  v1::PublishRendezvousRequest p;
  p.set_key("t/k");
  p.set_value("v");
  v1::PublishRendezvousReply pr;
  EXPECT_EQ(stub_->PublishRendezvous(&c1, p, &pr).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext rc;
  v1::RegisterAgentRequest reg;
  *reg.mutable_agent() = Info("me", "127.0.0.1:1");
  v1::RegisterAgentReply rr;
  ASSERT_TRUE(stub_->RegisterAgent(&rc, reg, &rr).ok());
  ScopedRendezvousGrant trial(&runner_->rendezvous_grants(), "t", {"me"});
  grpc::ClientContext c2, c3;
  EXPECT_TRUE(stub_->PublishRendezvous(&c2, p, &pr).ok());
  p.set_value("other");
  EXPECT_EQ(stub_->PublishRendezvous(&c3, p, &pr).error_code(), grpc::StatusCode::ALREADY_EXISTS);
}

// Issue 12: rendezvous values are bound to the agents placed in the key's trial. Before, any live
// agent could publish or fetch any key.
TEST(RendezvousGrants, KeysBelongToTheScopeTheirTrialGranted) {
  RendezvousGrants g;
  EXPECT_FALSE(g.AgentsFor("t1.abc/nccl").has_value()) << "no running trial: nobody";
  {
    ScopedRendezvousGrant trial(&g, "t1.abc", {"n1", "n2"});
    EXPECT_EQ(g.AgentsFor("t1.abc/nccl"), (std::set<std::string>{"n1", "n2"}));
    EXPECT_EQ(g.AgentsFor("t1.abc/a/b"), (std::set<std::string>{"n1", "n2"}));
    EXPECT_FALSE(g.AgentsFor("t1.abc").has_value()) << "a key is SCOPE/NAME";
    EXPECT_FALSE(g.AgentsFor("t1.ab/nccl").has_value());
    EXPECT_FALSE(g.AgentsFor("t1.abcd/nccl").has_value());
  }
  EXPECT_FALSE(g.AgentsFor("t1.abc/nccl").has_value()) << "revoked when the trial ends";
}

TEST_F(ControllerServiceBounds, RendezvousKeysAreForTheAgentsPlacedInTheirTrial) {
  ASSERT_EQ(Register("me"), grpc::StatusCode::OK);
  ScopedRendezvousGrant mine(&runner_->rendezvous_grants(), "mine", {"me", "gone"});
  ScopedRendezvousGrant other(&runner_->rendezvous_grants(), "other", {"n9"});
  EXPECT_EQ(Publish("mine/k"), grpc::StatusCode::OK);
  EXPECT_EQ(Fetch("mine/k"), grpc::StatusCode::OK);
  EXPECT_EQ(Publish("other/k"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Fetch("other/k"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Publish("nobody/k"), grpc::StatusCode::PERMISSION_DENIED) << "no trial owns it";
  EXPECT_EQ(Publish("unscoped"), grpc::StatusCode::PERMISSION_DENIED);
}

std::shared_ptr<const rpc::TokenTable> TwoAgentTokens() {
  auto tokens = rpc::TokenTable::Parse(
      "agent n1 " + rpc::Sha256Hex("tok-1") + "\nagent n2 " + rpc::Sha256Hex("tok-2") + "\n",
      "tokens");
  EXPECT_TRUE(tokens.ok()) << tokens.error();
  return std::make_shared<const rpc::TokenTable>(std::move(*tokens));
}

// Finding (issue 12): gRPC keeps one auth context per connection, and the caller's identity was
// recorded in it on every call: handlers then saw the connection's first caller, whatever token
// a later call carried (n2 was refused as "agent/n1"; with the tokens the other way round, a
// holder of one token could act under the identity of the connection's first).
TEST_F(ControllerServiceBounds, EveryCallIsItsOwnTokensCallerOnASharedConnection) {
  Serve(TwoAgentTokens());
  EXPECT_EQ(Register("n1", "tok-1"), grpc::StatusCode::OK);
  EXPECT_EQ(Register("n2", "tok-2"), grpc::StatusCode::OK);
  EXPECT_EQ(Register("n1", "tok-2"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Register("n2", "tok-1"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Register("n1", ""), grpc::StatusCode::UNAUTHENTICATED);
}

// Two agents on one host, told apart by their tokens: n2 is not in n1's trial.
TEST_F(ControllerServiceBounds, AnAgentOfAnotherTrialOnTheSameHostIsRefused) {
  Serve(TwoAgentTokens());
  ASSERT_EQ(Register("n1", "tok-1"), grpc::StatusCode::OK);
  ASSERT_EQ(Register("n2", "tok-2"), grpc::StatusCode::OK);
  ScopedRendezvousGrant trial(&runner_->rendezvous_grants(), "t1", {"n1"});
  EXPECT_EQ(Publish("t1/nccl", "tok-1"), grpc::StatusCode::OK);
  EXPECT_EQ(Publish("t1/nccl", "tok-2"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Fetch("t1/nccl", "tok-2"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Fetch("t1/nccl", "tok-1"), grpc::StatusCode::OK);
}

TEST_F(ControllerServiceBounds, QueuedExperimentsAreCapped) {
  scheduler_->SetMaxQueued(2);  // the worker is not started: everything stays queued
  const std::string yaml =
      "name: q\nvictim:\n  command: [\"true\"]\n  progress: {format: wall}\n"
      "antagonists:\n  - name: n\n    injector: noop\n    levels: [0.5]\n";
  int ok = 0;
  grpc::Status last;
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext c;
    v1::SubmitExperimentRequest req;
    req.set_yaml(yaml);
    v1::SubmitExperimentReply rep;
    last = stub_->SubmitExperiment(&c, req, &rep);
    ok += last.ok() ? 1 : 0;
  }
  EXPECT_EQ(ok, 2) << last.error_message();
  EXPECT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(last.error_message().find("already queued"), std::string::npos);
}

}  // namespace
}  // namespace codl::controller
