// AgentRegistry: registration, liveness, node selection and clock offsets, on a fake clock.
#include "controller/agent_registry.h"

#include <set>

#include <gtest/gtest.h>

#include "tests/controller/fake_agent.h"

namespace codl::controller {
namespace {

TEST(AgentRegistry, RegisterRefusesAnAgentItCannotDial) {
  FakeClock clock;
  AgentRegistry r(
      &clock,
      [](const std::string&, const std::string&) { return std::shared_ptr<AgentClient>(nullptr); },
      5);
  v1::AgentInfo info;
  info.set_agent_id("a");
  info.set_address("x");
  // A factory returning null is refused with a clear message.
  EXPECT_FALSE(r.Register(info).ok());
}

// Cloned VMs or containers sharing a hostname: with no identities to tell them apart (plaintext
// loopback, no tokens), the live agent keeps its id against another process or address.
TEST(AgentRegistry, ALiveIdIsNotTakenByAnotherSessionOrAddress) {
  FakeClock clock;
  auto fake = std::make_shared<FakeAgent>();
  AgentRegistry r(
      &clock, [&](const std::string&, const std::string&) { return fake; }, 5);
  v1::AgentInfo info;
  info.set_agent_id("node1");
  info.set_address("10.0.0.1:7701");
  ASSERT_TRUE(r.Register(info, {}, {}, "session-a").ok());
  ASSERT_TRUE(r.Register(info, {}, {}, "session-a").ok()) << "the same process re-registers";

  v1::AgentInfo other = info;
  other.set_address("10.0.0.2:7701");
  Status s = r.Register(other, {}, {}, "session-b");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  for (const char* want : {"agent id 'node1' is taken by a live agent at 10.0.0.1:7701",
                           "another agent with that id at 10.0.0.2:7701", "--id"}) {
    EXPECT_NE(s.error().find(want), std::string::npos) << want << " in: " << s.error();
  }
  EXPECT_EQ(r.Register(info, {}, {}, "session-b").code(), StatusCode::kAlreadyExists)
      << "same address, another process: refused too";
  EXPECT_EQ(r.Register(other, {}, {}, "session-a").code(), StatusCode::kAlreadyExists)
      << "same session, another address";
  EXPECT_FALSE(r.Heartbeat("node1", 0.001, 0, 0, {}, -1, "session-b"))
      << "the refused one's heartbeats do not keep the id alive";
  EXPECT_TRUE(r.Heartbeat("node1", 0.001, 0, 0, {}, -1, "session-a"));
  EXPECT_EQ(r.List().front().address(), "10.0.0.1:7701");

  // A restarted agent (a new session) takes over once its predecessor has been silent.
  clock.Advance(6);
  ASSERT_TRUE(r.Register(other, {}, {}, "session-b").ok());
  EXPECT_EQ(r.List().front().address(), "10.0.0.2:7701");
  EXPECT_FALSE(r.Heartbeat("node1", 0.001, 0, 0, {}, -1, "session-a"));
}

TEST(AgentRegistry, LivenessSelectionAndOffsets) {
  FakeClock clock;
  auto fake = std::make_shared<FakeAgent>();
  AgentRegistry r(
      &clock, [&](const std::string&, const std::string&) { return fake; }, 5);
  for (const char* id : {"b", "a"}) {
    v1::AgentInfo info;
    info.set_agent_id(id);
    info.set_address(std::string("addr-") + id);
    (*info.mutable_labels())["role"] = id == std::string("a") ? "gpu" : "storage";
    ASSERT_TRUE(r.Register(info).ok());
  }
  EXPECT_TRUE(r.Heartbeat("a", 0.010, 0.004, 0));
  EXPECT_TRUE(r.Heartbeat("a", 0.001, 0.002, 0));
  EXPECT_TRUE(r.Heartbeat("a", 0.020, -0.01, 0));
  EXPECT_DOUBLE_EQ(r.ClockOffset("a"), 0.002);
  EXPECT_FALSE(r.Heartbeat("zzz", 0.001, 0, 0)) << "unknown agents are told to re-register";

  experiment::NodeSelector gpu;
  gpu.kind = experiment::NodeSelector::Kind::kLabels;
  gpu.labels = {{"role", "gpu"}};
  auto sel = r.Select(gpu);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(*sel, std::vector<std::string>{"a"});

  experiment::NodeSelector all;
  EXPECT_EQ(*r.Select(all), (std::vector<std::string>{"a", "b"}));

  experiment::NodeSelector three;
  three.kind = experiment::NodeSelector::Kind::kCount;
  three.count = 3;
  ASSERT_FALSE(r.Select(three).ok());
  EXPECT_NE(r.Select(three).error().find("needs 3 live agents, 2 are up"), std::string::npos);

  clock.Advance(4);
  EXPECT_TRUE(r.Heartbeat("b", 0.001, 0, 0));
  clock.Advance(2);  // a: 6 s silent (> 5), b: 2 s
  EXPECT_FALSE(r.Alive("a"));
  EXPECT_TRUE(r.Alive("b"));
  EXPECT_EQ(*r.Select(all), std::vector<std::string>{"b"});
  auto none = r.Select(gpu);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(),
            "node selector 'labels: {role: gpu}' matched no live agent (2 registered)");
}

// Node reservations (controller/experiment_scheduler.h): `only` hides agents outside it, and
// `count: N` takes the agents in `avoid` last; other selectors still want every match.
TEST(AgentRegistry, SelectionScopeHidesAndAvoidsAgents) {
  FakeClock clock;
  auto fake = std::make_shared<FakeAgent>();
  AgentRegistry r(
      &clock, [&](const std::string&, const std::string&) { return fake; }, 5);
  for (const char* id : {"c", "b", "a"}) {
    v1::AgentInfo info;
    info.set_agent_id(id);
    info.set_address(std::string("addr-") + id);
    ASSERT_TRUE(r.Register(info).ok());
  }
  experiment::NodeSelector two;
  two.kind = experiment::NodeSelector::Kind::kCount;
  two.count = 2;
  EXPECT_EQ(*r.Select(two), (std::vector<std::string>{"a", "b"}));
  const std::set<std::string> a = {"a"}, ab = {"a", "b"}, bc = {"b", "c"};
  EXPECT_EQ(*r.Select(two, {nullptr, &a}), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(*r.Select(two, {nullptr, &ab}), (std::vector<std::string>{"c", "a"}))
      << "only one agent is free: the first avoided one makes up the count";
  EXPECT_EQ(*r.Select(two, {&bc, nullptr}), (std::vector<std::string>{"b", "c"}));
  experiment::NodeSelector all;
  EXPECT_EQ(*r.Select(all, {nullptr, &a}), (std::vector<std::string>{"a", "b", "c"}))
      << "an all-nodes selector needs the avoided agent too";
  EXPECT_EQ(*r.Select(all, {&bc, nullptr}), (std::vector<std::string>{"b", "c"}));
  const std::set<std::string> none;
  auto empty = r.Select(all, {&none, nullptr});
  ASSERT_FALSE(empty.ok());
  experiment::NodeSelector three = two;
  three.count = 3;
  EXPECT_FALSE(r.Select(three, {&bc, nullptr}).ok());
}

// The registry forgets silent agents with a sweep that runs at most once a second (not on
// every heartbeat: that made the heartbeat path O(agents)), yet an expired agent's own
// heartbeat is refused exactly on time.
TEST(AgentRegistry, EvictionSweepsAtMostOncePerSecondButExpiresOnLookup) {
  FakeClock clock;
  auto fake = std::make_shared<FakeAgent>();
  AgentRegistry r(
      &clock, [&](const std::string&, const std::string&) { return fake; }, /*dead_after_s=*/5,
      /*evict_after_s=*/60);
  auto info = [](const std::string& id) {
    v1::AgentInfo i;
    i.set_agent_id(id);
    i.set_address("addr-" + id);
    return i;
  };
  ASSERT_TRUE(r.Register(info("a")).ok());  // t = 0 (and the first sweep)
  clock.Advance(0.6);
  ASSERT_TRUE(r.Register(info("c")).ok());  // t = 0.6
  clock.Advance(59.9);
  ASSERT_TRUE(r.Register(info("b")).ok());  // t = 60.5: sweeps; a (60.5 s silent) goes
  EXPECT_EQ(r.List().size(), 2u);
  clock.Advance(0.4);  // t = 60.9: c is 60.3 s silent, the next sweep is due at 61.5
  EXPECT_TRUE(r.Heartbeat("b", 0.001, 0, 0));
  EXPECT_EQ(r.List().size(), 2u) << "no sweep within a second of the last one";
  EXPECT_FALSE(r.Heartbeat("c", 0.001, 0, 0)) << "expired: told to re-register, on time";
  EXPECT_EQ(r.List().size(), 1u);
  ASSERT_TRUE(r.Register(info("c")).ok()) << "and it may";
  EXPECT_TRUE(r.Heartbeat("c", 0.001, 0, 0));
}

}  // namespace
}  // namespace codl::controller
