// The health service and JSON logs of a real daemon: codl-controller started with
// --log-format json and --health-listen answers grpc.health.v1.Health/Check SERVING on both its
// main port (without credentials, where every other method needs a token) and the health-only
// port, NOT_SERVING (or closed) once SIGTERM starts the drain; every stderr line is a JSON object.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <sstream>

#include "lib/daemon/logging.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/health.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using testing::Bin;

// grpc.health.v1 on the wire, without generated code: HealthCheckRequest{string service = 1},
// HealthCheckResponse{ServingStatus status = 1}.
enum class Serving { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3, kError };

std::string EncodeRequest(const std::string& service) {
  if (service.empty()) return "";
  return std::string(1, '\x0a') + static_cast<char>(service.size()) + service;
}

Serving Check(const std::string& address, const std::string& service) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  const std::string req = EncodeRequest(service);
  grpc::Slice slice(req);
  grpc::ByteBuffer request(&slice, 1), response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = s;
                   done = true;
                   cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) return Serving::kError;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return Serving::kError;
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  if (bytes.empty()) return Serving::kUnknown;  // proto3 default: UNKNOWN
  if (bytes.size() != 2 || bytes[0] != '\x08') return Serving::kError;
  return static_cast<Serving>(bytes[1]);
}

TEST(HealthMethods, OnlyTheHealthServiceIsAdmittedWithoutARole) {
  EXPECT_TRUE(rpc::IsHealthMethod("/grpc.health.v1.Health/Check"));
  EXPECT_TRUE(rpc::IsHealthMethod("/grpc.health.v1.Health/Watch"));
  EXPECT_FALSE(rpc::IsHealthMethod("/grpc.health.v1.Health/List"));
  EXPECT_FALSE(rpc::IsHealthMethod("/codl.v1.Controller/ListAgents"));
  EXPECT_FALSE(rpc::IsHealthMethod("/grpc.health.v1.Health/Check/x"));
}

TEST(JsonLogLine, HasTheDocumentedFieldsAndEscapes) {
  auto j = nlohmann::json::parse(
      daemon::JsonLogLine(1764530401123, "warn", "a \"quoted\"\nline", "codl-agent"));
  EXPECT_EQ(j["ts"], "2025-11-30T19:20:01.123Z");
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["msg"], "a \"quoted\"\nline");
  EXPECT_EQ(j["component"], "codl-agent");
}

TEST(ConfigureLogging, RejectsUnknownLevelsAndFormats) {
  EXPECT_FALSE(daemon::ConfigureLogging("t", "loud", "text").ok());
  EXPECT_FALSE(daemon::ConfigureLogging("t", "info", "xml").ok());
  EXPECT_TRUE(daemon::ConfigureLogging("t", "warn", "text").ok());
}

// One escaping rule for text logs: a name holding CR/LF and escape sequences is one line, its
// control bytes written as \xNN (a forged "next line" stays on this one).
TEST(ConfigureLogging, TextLinesEscapeControlCharacters) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "escape-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  ASSERT_TRUE(daemon::ConfigureLogging("t", "info", "text").ok());
  spdlog::info("experiment 1 '{}' queued", "x\r\n[info] forged\x1b]0;title\x07\x1b[2J");
  spdlog::set_default_logger(previous);
  const std::string line = out.str();
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_NE(line.find("x\\x0D\\x0A[info] forged\\x1B]0;title\\x07\\x1B[2J' queued"),
            std::string::npos)
      << line;
}

class DaemonHealthTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("codl-health"); }
  void TearDown() override { testing::RemoveTree(dir_); }
  std::string dir_;
};

TEST_F(DaemonHealthTest, ServingUntilSigtermThenNotServingAndLogsAreJson) {
  // A tokens file: anonymous calls to codl methods are refused, health calls are not.
  testing::WriteSecretFile(dir_ + "/tokens", "admin alice " + rpc::Sha256Hex("secret") + "\n");
  const std::string main = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const std::string health = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const std::string log = dir_ + "/controller.log";
  testing::Process controller({Bin("codl-controller"), "--listen", main, "--db", dir_ + "/c.db",
                               "--insecure", "--tokens-file", dir_ + "/tokens", "--health-listen",
                               health, "--log-format", "json", "--log-level", "debug"},
                              log);
  ASSERT_TRUE(testing::WaitUntil([&] { return Check(health, "") == Serving::kServing; }, 20))
      << testing::ReadFile(log);
  EXPECT_EQ(Check(health, "codl.v1.Controller"), Serving::kServing);
  EXPECT_EQ(Check(main, ""), Serving::kServing);
  EXPECT_EQ(Check(main, "codl.v1.Controller"), Serving::kServing);
  EXPECT_EQ(Check(main, "codl.v1.Nothing"), Serving::kError);  // NOT_FOUND

  controller.Signal(SIGTERM);
  EXPECT_TRUE(testing::WaitUntil([&] { return Check(main, "") != Serving::kServing; }, 10));
  const Serving after = Check(health, "codl.v1.Controller");
  EXPECT_TRUE(after == Serving::kNotServing || after == Serving::kError);
  EXPECT_EQ(controller.Wait(10), 0);

  const std::string text = testing::ReadFile(log);
  std::istringstream lines(text);
  const std::regex rfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    EXPECT_TRUE(std::regex_match(j.value("ts", ""), rfc3339)) << line;
    EXPECT_TRUE(j.contains("level") && j.contains("msg")) << line;
    EXPECT_EQ(j.value("component", ""), "codl-controller") << line;
  }
  EXPECT_GE(n, 2) << text;  // at least "listening" and the signal line
}

// The agent likewise, registered with no controller (it keeps retrying): health says whether it
// serves, not whether the controller is reachable.
TEST_F(DaemonHealthTest, AgentServesHealthWithoutAControllerAndDrainsOnSigterm) {
  testing::WriteSecretFile(dir_ + "/tokens", "controller - " + rpc::Sha256Hex("secret") + "\n");
  const std::string main = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const std::string health = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const std::string log = dir_ + "/agent.log";
  testing::Process agent(
      {Bin("codl-agent"), "--controller", "127.0.0.1:1", "--listen", main, "--insecure",
       "--tokens-file", dir_ + "/tokens", "--id", "h1", "--health-listen", health, "--log-format",
       "json", "--scratch-root", dir_},
      log);
  ASSERT_TRUE(
      testing::WaitUntil([&] { return Check(main, "codl.v1.Agent") == Serving::kServing; }, 20))
      << testing::ReadFile(log);
  // The health port opens after the main one (its own server); a probe retries, so may we.
  ASSERT_TRUE(
      testing::WaitUntil([&] { return Check(health, "codl.v1.Agent") == Serving::kServing; }, 20))
      << testing::ReadFile(log);
  EXPECT_EQ(Check(health, ""), Serving::kServing);
  agent.Signal(SIGTERM);
  EXPECT_TRUE(testing::WaitUntil([&] { return Check(main, "") != Serving::kServing; }, 10));
  EXPECT_EQ(agent.Wait(10), 0);
  std::istringstream lines(testing::ReadFile(log));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    EXPECT_EQ(j.value("component", ""), "codl-agent") << line;
  }
}

}  // namespace
}  // namespace codl
