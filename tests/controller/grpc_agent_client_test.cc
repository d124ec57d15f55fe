// GrpcAgentClient's callback-API calls (the trial's fan-outs: stops, node telemetry windows)
// against an address where nothing listens: each fails with the agent and the method named,
// after its one retry on UNAVAILABLE, 200 ms later.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "controller/agent_client.h"

namespace codl::controller {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(GrpcAgentClientAsync, AnUnreachableAgentIsRetriedOnceThenNamed) {
  // Port 1 on loopback: nothing listens, the connection is refused (UNAVAILABLE) at once.
  const std::shared_ptr<AgentClient> client = GrpcAgentClientFactory({})("a1", "127.0.0.1:1");
  ASSERT_NE(client, nullptr);
  v1::StopAntagonistRequest stop;
  stop.set_antagonist_id("x");
  stop.set_idempotency_key("k");
  std::promise<Result<v1::StopAntagonistReply>> stopped;
  std::promise<Status> begun;
  std::promise<Result<v1::NodeTelemetry>> ended;
  const auto t0 = std::chrono::steady_clock::now();
  client->StopAntagonistAsync(
      stop, [&](Result<v1::StopAntagonistReply> r) { stopped.set_value(std::move(r)); });
  client->BeginNodeWindowAsync("t1", 60, [&](Status s) { begun.set_value(std::move(s)); });
  client->EndNodeWindowAsync("t1",
                             [&](Result<v1::NodeTelemetry> r) { ended.set_value(std::move(r)); });
  auto stop_reply = stopped.get_future();
  auto begin_reply = begun.get_future();
  auto end_reply = ended.get_future();
  ASSERT_EQ(stop_reply.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_EQ(begin_reply.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_EQ(end_reply.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_GE(SecondsSince(t0), 0.2) << "the retry waits 200 ms";
  const auto s = stop_reply.get();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.error().find("agent a1 StopAntagonist"), std::string::npos) << s.error();
  const Status b = begin_reply.get();
  EXPECT_NE(b.error().find("agent a1 BeginNodeWindow"), std::string::npos) << b.error();
  const auto e = end_reply.get();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("agent a1 EndNodeWindow"), std::string::npos) << e.error();
}

}  // namespace
}  // namespace codl::controller
