// victim.distributed / victim.master_port: parsing, the >= 2 nodes rule, the reserved
// environment names, the ranks' environment and the --plan line.
#include <gtest/gtest.h>

#include <string>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

std::string DistributedErrorOf(const std::string& yaml) {
  auto spec = ParseExperiment(yaml, "e.yaml");
  return spec.ok() ? "(parsed)" : spec.error();
}

// victim.trace: {steps: K}, off by default; K in [1, kMaxTraceSteps]; errors at the value.
TEST(VictimTraceSpec, StepsParsedInRangeWithLineAndColumn) {
  auto off = ParseExperiment("name: x\nvictim: {command: [a]}\n", "e.yaml");
  ASSERT_TRUE(off.ok()) << off.error();
  EXPECT_EQ(off->victim.trace_steps, 0);
  auto on = ParseExperiment("name: x\nvictim:\n  command: [a]\n  trace: {steps: 5}\n", "e.yaml");
  ASSERT_TRUE(on.ok()) << on.error();
  EXPECT_EQ(on->victim.trace_steps, 5);
  const std::string zero =
      DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  trace: {steps: 0}\n");
  EXPECT_EQ(zero.rfind("e.yaml:4:18: victim.trace.steps:", 0), 0u) << zero;
  EXPECT_NE(DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  trace: {steps: 101}\n")
                .find("victim.trace.steps"),
            std::string::npos);
  EXPECT_NE(
      DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  trace: {step: 5}\n").find("step"),
      std::string::npos);
  EXPECT_NE(DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  trace: {}\n").find("steps"),
            std::string::npos);
}

TEST(DistributedVictimSpec, DefaultsToOneInstance) {
  auto spec = ParseExperiment("name: x\nvictim: {command: [a]}\n", "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_FALSE(spec->victim.distributed);
  EXPECT_EQ(spec->victim.master_port, 29500);
  EXPECT_EQ(VictimPlacementLine(*spec), "victim: one instance on the first node of all");
}

TEST(DistributedVictimSpec, ParsesNodesAndPort) {
  auto spec = ParseExperiment(
      "name: x\nvictim:\n  command: [a]\n  distributed: true\n  master_port: 29600\n"
      "  nodes: [b, a]\n",
      "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_TRUE(spec->victim.distributed);
  EXPECT_EQ(spec->victim.master_port, 29600);
  EXPECT_EQ(VictimPlacementLine(*spec),
            "victim: distributed, one rank per node of hosts: [b, a] (ranks 0..N-1 in agent-id "
            "order; rank 0's node is MASTER_ADDR), master port 29600");
  // A label selector may match many nodes: checked when the controller places it.
  EXPECT_EQ(
      DistributedErrorOf("name: x\nvictim: {command: [a], distributed: true, nodes: {labels: {r: "
                         "v}}}\n"),
      "(parsed)");
}

TEST(DistributedVictimSpec, FewerThanTwoNodesIsAnErrorAtTheSelector) {
  EXPECT_EQ(
      DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  distributed: true\n  nodes: [a]\n"),
      "e.yaml:5:10: victim.nodes: distributed: true needs at least 2 nodes (one rank per "
      "node); victim.nodes selects hosts: [a]");
  EXPECT_EQ(DistributedErrorOf(
                "name: x\nnodes: {count: 1}\nvictim:\n  command: [a]\n  distributed: true\n"),
            "e.yaml:5:16: victim.distributed: distributed: true needs at least 2 nodes (one rank "
            "per node); the experiment's nodes selects count: 1");
}

TEST(DistributedVictimSpec, PortRangeAndPortWithoutDistributed) {
  EXPECT_NE(DistributedErrorOf("name: x\nvictim: {command: [a], distributed: true, nodes: [a, b], "
                               "master_port: 80}\n")
                .find("victim.master_port"),
            std::string::npos);
  EXPECT_EQ(DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  master_port: 29501\n"),
            "e.yaml:4:3: victim.master_port: only used with distributed: true");
  EXPECT_NE(DistributedErrorOf("name: x\nvictim: {command: [a], distributed: maybe}\n")
                .find("victim.distributed"),
            std::string::npos);
}

TEST(DistributedVictimSpec, TheRanksVariablesAreTheControllers) {
  EXPECT_EQ(
      DistributedErrorOf("name: x\nvictim:\n  command: [a]\n  distributed: true\n  nodes: [a, b]\n"
                         "  env: {OMP_NUM_THREADS: '1', MASTER_PORT: '1'}\n"),
      "e.yaml:6:31: victim.env.MASTER_PORT: set by the controller for each rank of a "
      "distributed victim; remove it");
  // Not distributed: the user's own RANK is passed through untouched.
  EXPECT_EQ(DistributedErrorOf("name: x\nvictim: {command: [a], env: {RANK: '3'}}\n"), "(parsed)");
}

TEST(DistributedVictimSpec, EnvironmentOfARank) {
  auto env = DistributedEnvironment(1, 2, "10.0.0.7", 29500);
  EXPECT_EQ(env.at("RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("LOCAL_RANK"), "0");
  EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.7");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env.at("CODL_VICTIM_RANK"), "1");
  EXPECT_EQ(env.at("CODL_VICTIM_WORLD_SIZE"), "2");
  for (const auto& [k, v] : env) EXPECT_TRUE(IsDistributedVariable(k)) << k;
  EXPECT_FALSE(IsDistributedVariable("OMP_NUM_THREADS"));
}

}  // namespace
}  // namespace codl::experiment
