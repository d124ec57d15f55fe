// codlctl trace's merge: the antagonists' samples become counter tracks on the trace's clock,
// aligned on the end of the trace's first codl.step#K range, known by construction here.
#include "lib/analysis/trace_merge.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace codl::experiment {
namespace {

TrialRecord Trial() {
  TrialRecord t;
  t.pairing = "membw@0.5";
  VictimStep s4;
  s4.step = 4;
  s4.t_s = 2.0;  // step 4 ended 2 s after the victim started
  t.steps = {s4};
  AntagonistResult a;
  a.name = "membw";
  a.unit = "bytes/s";
  a.node = "n1";
  a.samples = {{-0.5, 1e9, 2e9}, {1.0, 1.9e9, 2e9}, {3.0, 2e9, 2e9}};
  t.antagonists = {a};
  return t;
}

TEST(TraceMergeTest, CountersSitOnTheTracesClock) {
  // The trace's clock: step 4 ran from 1,000,000 to 1,250,000 us, so its end (t_s 2.0) is
  // 1,250,000 us and the victim started at -750,000 us.
  const std::string trace =
      R"({"traceEvents":[{"name":"codl.step#5","ph":"X","ts":1300000,"dur":10},)"
      R"({"name":"codl.step#4","ph":"X","ts":1000000,"dur":250000},)"
      R"({"name":"aten::mm","ph":"X","ts":1000100,"dur":5}],"displayTimeUnit":"ms"})";
  auto m = MergeTraceWithAntagonists(trace, Trial());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->counter_events, 3);
  EXPECT_NE(m->note.find("aligned on the end of step 4"), std::string::npos) << m->note;
  const auto j = nlohmann::json::parse(m->json);
  EXPECT_EQ(j["displayTimeUnit"], "ms") << "the rest of the trace is kept";
  std::vector<double> ts;
  bool named = false;
  for (const auto& ev : j["traceEvents"]) {
    if (ev["ph"] == "C") {
      EXPECT_EQ(ev["name"], "membw achieved (bytes/s) on n1");
      ts.push_back(ev["ts"].get<double>());
      EXPECT_DOUBLE_EQ(ev["args"]["target"].get<double>(), 2e9);
    }
    if (ev["ph"] == "M" && ev["name"] == "process_name") {
      named = ev["args"]["name"] == "CoDL antagonists (membw@0.5)";
    }
  }
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_DOUBLE_EQ(ts[0], -1250000);  // -0.5 s: settling, before the victim started
  EXPECT_DOUBLE_EQ(ts[1], 250000);
  EXPECT_DOUBLE_EQ(ts[2], 2250000);
  EXPECT_TRUE(named);
}

TEST(TraceMergeTest, WhatCannotBeAlignedIsSaidAndWhatIsNotATraceRefused) {
  auto no_steps = MergeTraceWithAntagonists(R"([{"name":"x","ph":"X","ts":1,"dur":1}])", Trial());
  ASSERT_TRUE(no_steps.ok()) << "a bare event array is a trace too";
  EXPECT_EQ(no_steps->counter_events, 0);
  EXPECT_NE(no_steps->note.find("no codl.step#K range"), std::string::npos);

  auto unknown = MergeTraceWithAntagonists(
      R"({"traceEvents":[{"name":"codl.step#9","ph":"X","ts":1,"dur":1}]})", Trial());
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->counter_events, 0);
  EXPECT_NE(unknown->note.find("step 9 of the trace is not among the trial's recorded steps"),
            std::string::npos);

  EXPECT_FALSE(MergeTraceWithAntagonists("not json", Trial()).ok());
  EXPECT_FALSE(MergeTraceWithAntagonists(R"({"events":[]})", Trial()).ok());
  EXPECT_FALSE(MergeTraceWithAntagonists(R"({"traceEvents":{}})", Trial()).ok());
  // Malformed events are skipped, not trusted.
  auto odd = MergeTraceWithAntagonists(
      R"({"traceEvents":[1,"x",{"name":5},{"name":"codl.step#x","ts":1,"dur":1},)"
      R"({"name":"codl.step#4","ts":"1","dur":1}]})",
      Trial());
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->counter_events, 0);
}

}  // namespace
}  // namespace codl::experiment
