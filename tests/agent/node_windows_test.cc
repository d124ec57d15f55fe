// NodeWindows (agent/node_windows.h): node telemetry windows on a node with antagonists only —
// one per trial, ended once, refused outside their ranges, dropped when the lease runs out.
// Real /proc and the real clock: the figures are this machine's, so only their shape is checked.
#include "agent/node_windows.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace codl::agent {
namespace {

TEST(NodeWindowsTest, AWindowCountsTheNodeFromBeginToEnd) {
  NodeWindows w(SystemClock::Get());
  ASSERT_TRUE(w.Begin("trial-1", 30).ok());
  ASSERT_TRUE(w.Begin("trial-1", 30).ok());  // a retried call keeps the open window
  EXPECT_EQ(w.open(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(450));  // two MemAvailable ticks
  auto t = w.End("trial-1");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_GE(t->window_s, 0.4);
  EXPECT_TRUE(t->node.empty());  // the controller names it
  bool lo = false;
  for (const auto& n : t->nics) lo = lo || n.interface == "lo";
  EXPECT_TRUE(lo);
  EXPECT_GT(t->mem_available_min_bytes, 0);
  EXPECT_FALSE(t->membw_note.empty());  // a source, or why there is none
  EXPECT_EQ(w.open(), 0u);
  auto again = w.End("trial-1");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_NE(again.error().find("no node telemetry window is open for trial 'trial-1'"),
            std::string::npos);
}

TEST(NodeWindowsTest, OutOfRangeRequestsAreRefused) {
  NodeWindows w(SystemClock::Get());
  EXPECT_EQ(w.Begin("", 10).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Begin(std::string(NodeWindows::kMaxTrialIdBytes + 1, 'x'), 10).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Begin("t", 0.5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Begin("t", NodeWindows::kMaxLeaseS * 2).code(), StatusCode::kInvalidArgument);
  for (size_t i = 0; i < NodeWindows::kMaxOpen; ++i)
    ASSERT_TRUE(w.Begin("t" + std::to_string(i), 60).ok());
  const Status full = w.Begin("one-more", 60);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.error().find("64 node telemetry windows open"), std::string::npos);
  EXPECT_EQ(w.open(), NodeWindows::kMaxOpen);
}

TEST(NodeWindowsTest, AWindowNotEndedWithinItsLeaseIsDropped) {
  NodeWindows w(SystemClock::Get());
  ASSERT_TRUE(w.Begin("lost-controller", 1).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (w.open() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(w.open(), 0u);
  EXPECT_EQ(w.End("lost-controller").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace codl::agent
