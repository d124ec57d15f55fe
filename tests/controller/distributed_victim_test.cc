// victim.distributed in the runner, against fake agents: one rank per node in agent-id order
// with the torch.distributed environment, rank 0's record, a failed rank stopping the others,
// warm-ups run the same way, and the placement errors.
#include <condition_variable>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "controller/agent_registry.h"
#include "controller/distributed_victim.h"
#include "controller/experiment_runner.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"
#include "tests/controller/fake_agent.h"
#include "tests/controller/run_plan.h"

namespace codl::controller {
namespace {

// A fake agent that keeps each victim request's environment, and can hold its victim running
// until StopAll (a rank waiting on a peer that died) or fail it.
class RankAgent : public FakeAgent {
 public:
  std::vector<std::map<std::string, std::string>> envs;
  std::vector<int64_t> start_at_ns;
  bool wait_for_stop = false;
  int stop_alls = 0;

  Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest& req, double d) override {
    {
      std::lock_guard<std::mutex> l(mu);
      envs.emplace_back(req.victim().env().begin(), req.victim().env().end());
      start_at_ns.push_back(req.start_at_unix_ns());
    }
    if (!wait_for_stop) return FakeAgent::RunVictim(req, d);
    std::unique_lock<std::mutex> l(mu);
    stopped_.wait_for(l, std::chrono::seconds(20), [&] { return stop_alls > 0; });
    v1::RunVictimReply r;
    r.set_ok(false);
    r.set_error(stop_alls > 0 ? "stopped: controller asked" : "never stopped");
    return r;
  }
  Status StopAll(const std::string&) override {
    std::lock_guard<std::mutex> l(mu);
    ++stop_alls;
    stopped_.notify_all();
    return Status::Ok();
  }

 private:
  std::condition_variable stopped_;
};

class DistributedVictimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("codl-dist-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto s = store::Store::Open((dir_ / "r.db").string());
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(s.value());
    registry_ = std::make_unique<AgentRegistry>(
        SystemClock::Get(),
        [this](const std::string& id, const std::string&) { return agents_.at(id); }, 60);
    // Registered out of order: ranks follow the sorted agent ids, not registration.
    Add("node-b", "10.0.0.2:7001");
    Add("node-a", "10.0.0.1:7001");
    runner_ = std::make_unique<ExperimentRunner>(registry_.get(), store_.get(), SystemClock::Get(),
                                                 RunnerOptions{0.0, 0.9, 0.0, 0.0});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Add(const std::string& id, const std::string& address) {
    agents_[id] = std::make_shared<RankAgent>();
    v1::AgentInfo info;
    info.set_agent_id(id);
    info.set_address(address);
    (*info.mutable_labels())["hostname"] = id;
    ASSERT_TRUE(registry_->Register(info).ok());
  }

  experiment::ExperimentSpec Spec(const std::string& nodes = "[node-a, node-b]", int warmups = 0) {
    auto s = experiment::ParseExperiment(
        "name: dist\n"
        "victim: {command: [victim], distributed: true, master_port: 29600, nodes: " +
            nodes +
            "}\n"
            "antagonists:\n"
            "  - {name: flood, injector: memcpy, levels: [0.5], nodes: [node-a, node-b]}\n"
            "repetitions: 2\nsettle: 0s\nwarmup_trials: " +
            std::to_string(warmups) + "\n",
        "dist.yaml");
    EXPECT_TRUE(s.ok()) << s.error();
    return *s;
  }

  Status Run(const experiment::ExperimentSpec& spec, ExperimentRecord* rec) {
    return RunWholePlan(*runner_, *store_, spec, &counter_, cancel_, rec);
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::map<std::string, std::shared_ptr<RankAgent>> agents_;
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<ExperimentRunner> runner_;
  std::atomic<bool> cancel_{false};
  int counter_ = 0;
};

TEST_F(DistributedVictimTest, OneRankPerNodeInAgentIdOrderWithTheTorchEnvironment) {
  auto spec = Spec("[node-b, node-a]", 1);
  ExperimentRecord rec;
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(static_cast<int>(trials->size()), rec.total_trials);
  for (const auto& t : *trials) {
    EXPECT_EQ(t.state, TrialState::kDone) << t.error;
    EXPECT_EQ(t.victim_node, "node-a");  // rank 0's record
  }
  for (const auto& [id, agent] : agents_) {
    // Every trial and the warm-up ran one rank on each node.
    ASSERT_EQ(static_cast<int>(agent->envs.size()), rec.total_trials + 1) << id;
    const std::string rank = id == "node-a" ? "0" : "1";
    for (const auto& env : agent->envs) {
      EXPECT_EQ(env.at("RANK"), rank) << id;
      EXPECT_EQ(env.at("CODL_VICTIM_RANK"), rank) << id;
      EXPECT_EQ(env.at("WORLD_SIZE"), "2");
      EXPECT_EQ(env.at("LOCAL_RANK"), "0");
      EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.1");  // node-a's registered host
      EXPECT_EQ(env.at("MASTER_PORT"), "29600");
    }
  }
  // Each run's ranks were given one common start (the fakes' clock offsets are 0).
  ASSERT_EQ(agents_["node-a"]->start_at_ns.size(), agents_["node-b"]->start_at_ns.size());
  for (size_t i = 0; i < agents_["node-a"]->start_at_ns.size(); ++i) {
    EXPECT_GT(agents_["node-a"]->start_at_ns[i], 0);
    EXPECT_EQ(agents_["node-a"]->start_at_ns[i], agents_["node-b"]->start_at_ns[i]);
  }
  auto stored = store_->GetExperiment(rec.id);
  ASSERT_TRUE(stored.ok());
  auto prov = nlohmann::json::parse(stored->provenance_json);
  EXPECT_EQ(prov["victim"]["nodes"], nlohmann::json({"node-a", "node-b"}));
  EXPECT_EQ(prov["victim"]["master_addr"], "10.0.0.1");
  EXPECT_TRUE(prov["nodes"].contains("node-b"));
}

TEST_F(DistributedVictimTest, AFailedRankStopsTheOthersAndFailsTheTrialNamingIt) {
  agents_["node-a"]->wait_for_stop = true;  // rank 0 would wait on rank 1 forever
  agents_["node-b"]->fail_victim = true;
  auto spec = Spec();
  ExperimentRecord rec;
  Status s = Run(spec, &rec);
  EXPECT_FALSE(s.ok());  // every trial fails: the runner gives up after 3
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_FALSE(trials->empty());
  const TrialRecord& t = trials->front();
  EXPECT_EQ(t.state, TrialState::kFailed);
  EXPECT_EQ(t.error,
            "victim rank 1 (node node-b) failed: victim exited with status 3: boom (the other "
            "ranks were stopped)");
  EXPECT_EQ(t.stderr_tail, "boom");  // the failed rank's, not rank 0's
  EXPECT_GE(agents_["node-a"]->stop_alls, 1);
  for (const auto& [id, agent] : agents_) EXPECT_TRUE(agent->running.empty()) << id;
}

TEST_F(DistributedVictimTest, FewerThanTwoNodesOrAWildcardMasterIsAPlacementError) {
  ExperimentRecord rec;
  Status one = Run(Spec("{labels: {hostname: node-a}}"), &rec);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().find("victim.distributed needs at least 2 nodes"), std::string::npos)
      << one.error();
  Add("node-0", "0.0.0.0:7001");  // sorts first: rank 0
  Status wildcard = Run(Spec("[node-0, node-a]"), &rec);
  ASSERT_FALSE(wildcard.ok());
  EXPECT_NE(wildcard.error().find("--advertise"), std::string::npos) << wildcard.error();
}

TEST(MasterAddress, HostOfTheRegisteredAddress) {
  EXPECT_EQ(*MasterAddress("a", "10.0.0.7:7001"), "10.0.0.7");
  EXPECT_EQ(*MasterAddress("a", "[fd00::7]:7001"), "fd00::7");
  EXPECT_EQ(*MasterAddress("a", "node-a.example:7001"), "node-a.example");
  EXPECT_FALSE(MasterAddress("a", "0.0.0.0:7001").ok());
  EXPECT_FALSE(MasterAddress("a", "[::]:7001").ok());
}

}  // namespace
}  // namespace codl::controller
