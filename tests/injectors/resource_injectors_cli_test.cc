// The cpu, llc, pagecache and net injectors through the real codl-inject binary: levels and rates,
// the pagecache floor back-off and scratch confinement, SIGTERM/SIGKILL cleanup of its file.
// net runs on loopback only. Memory stays small (pagecache capped at 64 MiB, llc working sets of a
// few MiB). Accuracy bounds are loose: the test machine is shared; docs/performance.md has the
// measured figures.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "injectors/core/protocol.h"
#include "injectors/net/net_endpoint.h"
#include "tests/injectors/test_util.h"

namespace codl::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> InjectCmd(std::vector<std::string> args) { return CodlInjectCmd(args); }

// A TCP port free on 127.0.0.1 a moment ago (bound to port 0, read back, closed).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string Summary(const std::string& out) {
  for (const auto& line : Lines(out)) {
    if (JsonHas(line, "summary")) return line;
  }
  return "";
}

// Never above the target; below only when the tool says the target was not reachable.
void ExpectNearTarget(const std::string& summary, double target) {
  ASSERT_FALSE(summary.empty());
  EXPECT_NEAR(JsonNumber(summary, "target_rate"), target, target * 1e-8);
  const double ratio = JsonNumber(summary, "achieved_rate") / target;
  EXPECT_LE(ratio, 1.1) << summary;
  if (JsonNumber(summary, "saturated") == 0) {
    EXPECT_GE(ratio, 0.85) << summary;
  }
}

TEST(ResourceInjectorsTest, CpuRateIsCoreSecondsPerSecondWithOps) {
  // 0.2 core-s/s on one thread: a fifth of a core, reachable even on a busy box.
  ProcessResult r = RunProcess(InjectCmd({"cpu", "--set", "threads=1", "--set", "mix=int", "--rate",
                                          "0.2", "--duration", "2s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string s = Summary(r.out);
  EXPECT_THAT(s, HasSubstr("\"unit\":\"core-s/s\""));
  ExpectNearTarget(s, 0.2);
  EXPECT_GT(JsonNumber(s, "ops"), 0);
  // A CPU share cannot be given in bytes/s.
  r = RunProcess(InjectCmd({"cpu", "--rate", "1GiB/s"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("does not apply"));
  r = RunProcess(InjectCmd({"cpu", "--set", "cpus=4095", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("CPU 4095 is not available"));
  r = RunProcess(InjectCmd({"cpu", "--set", "period=100ms", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("out of range"));
}

TEST(ResourceInjectorsTest, LlcLevelAndMissReportingIsHonest) {
  ProcessResult r = RunProcess(InjectCmd({"llc", "--set", "working_set=2MiB", "--level", "0.5",
                                          "--peak", "400000", "--duration", "2s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string s = Summary(r.out);
  ExpectNearTarget(s, 200000);
  EXPECT_THAT(s, HasSubstr("working set 2.00 MiB (32768 lines"));
  // Either measured miss figures or a note saying why there are none; never both, never
  // neither.
  const bool measured = JsonHas(s, "llc_misses");
  EXPECT_NE(measured, s.find("LLC misses not measured") != std::string::npos) << s;
  r = RunProcess(InjectCmd(
      {"llc", "--set", "working_set=64KiB", "--set", "threads=128", "--max", "--duration", "1s"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("fewer than 16 lines per thread"));
}

TEST(ResourceInjectorsTest, PagecacheHoldsTheTargetResident) {
  for (const char* kind : {"anon", "file"}) {
    TempDir scratch;
    ProcessResult r = RunProcess(InjectCmd({"pagecache", "--set", std::string("kind=") + kind,
                                            "--set", "limit=64MiB", "--rate", "16Mi", "--duration",
                                            "1.5s", "--json", "--scratch-root", scratch.path()}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string s = Summary(r.out);
    EXPECT_THAT(s, HasSubstr("\"unit\":\"bytes\""));
    ExpectNearTarget(s, 16.0 * 1024 * 1024);
    EXPECT_EQ(JsonNumber(s, "backoffs"), 0) << s;
    for (const auto& line : Lines(r.out)) {
      if (!JsonHas(line, "summary")) {
        EXPECT_TRUE(JsonHas(line, "backed_off")) << line;
      }
    }
    EXPECT_TRUE(FindRunDirs(scratch.path()).empty()) << kind;
  }
}

TEST(ResourceInjectorsTest, PagecacheBacksOffAtTheFloorAndSaysSo) {
  // A floor far above this machine's memory: nothing may be held, and every interval says so.
  ProcessResult r =
      RunProcess(InjectCmd({"pagecache", "--set", "floor=16TiB", "--set", "limit=64MiB", "--rate",
                            "16Mi", "--duration", "1s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string s = Summary(r.out);
  EXPECT_EQ(JsonNumber(s, "achieved_rate"), 0) << s;
  EXPECT_EQ(JsonNumber(s, "saturated"), 1) << s;
  EXPECT_GE(JsonNumber(s, "backoffs"), 1) << s;
  EXPECT_THAT(s, HasSubstr("backed off"));
  for (const auto& line : Lines(r.out)) {
    if (!JsonHas(line, "summary")) {
      EXPECT_EQ(JsonNumber(line, "backed_off"), 1) << line;
    }
  }
}

TEST(ResourceInjectorsTest, PagecacheCalibratesToMemAvailable) {
  ProcessResult r =
      RunProcess(InjectCmd({"pagecache", "--calibrate", "--duration", "0.5s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string s = Summary(r.out);
  EXPECT_GT(JsonNumber(s, "peak_rate"), 64.0 * 1024 * 1024);
  EXPECT_THAT(s, HasSubstr("MemAvailable at the start"));
}

TEST(ResourceInjectorsTest, PagecacheFileStaysInsideTheScratchRoots) {
  TempDir scratch, outside;
  ProcessResult r = RunProcess(
      InjectCmd({"pagecache", "--set", "kind=file", "--set", "dir=" + outside.path(), "--set",
                 "limit=8MiB", "--max", "--duration", "1s", "--scratch-root", scratch.path()}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("outside the scratch roots"));
  EXPECT_TRUE(fs::is_empty(outside.path()));
}

TEST(ResourceInjectorsTest, PagecacheFileIsRemovedOnSigtermAndCleanedAfterSigkill) {
  TempDir scratch;
  auto start = [&] {
    auto child = std::make_unique<Child>(
        InjectCmd({"pagecache", "--set", "kind=file", "--set", "limit=16MiB", "--max", "--json",
                   "--scratch-root", scratch.path()}));
    EXPECT_THAT(child->ReadLine(10), HasSubstr("\"t_s\"")) << "pagecache did not start";
    return child;
  };
  auto term = start();
  auto dirs = FindRunDirs(scratch.path());
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_TRUE(fs::exists(dirs[0] + "/held"));
  kill(term->pid(), SIGTERM);
  EXPECT_EQ(term->Wait(5), 0);
  EXPECT_THAT(term->ReadRest(), HasSubstr("\"stopped_by_signal\":true"));
  EXPECT_TRUE(FindRunDirs(scratch.path()).empty());

  auto killed = start();
  dirs = FindRunDirs(scratch.path());
  ASSERT_EQ(dirs.size(), 1u);
  kill(killed->pid(), SIGKILL);
  EXPECT_EQ(killed->Wait(5), -SIGKILL);
  ProcessResult r =
      RunProcess(InjectCmd({"--cleanup-stale", "--json", "--scratch-root", scratch.path()}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"removed\":\"" + dirs[0] + "\"}\n");
  EXPECT_TRUE(FindRunDirs(scratch.path()).empty());
}

TEST(ResourceInjectorsTest, NetSendsToLoopbackAndToAReceiver) {
  // The in-process loopback sink: a rate far below what loopback carries.
  ProcessResult r =
      RunProcess(InjectCmd({"net", "--rate", "20MiB/s", "--duration", "1.5s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNearTarget(Summary(r.out), 20.0 * 1024 * 1024);
  // A receiver process on a port the kernel just handed out, and a sender to it: the sender's
  // rate is what the receiver drains.
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  Child receiver(InjectCmd({"net", "--set", "role=receive", "--set", "port=" + std::to_string(port),
                            "--max", "--duration", "4s", "--json"}));
  // Its port, for whoever starts the sender, is a note record before the load.
  EXPECT_EQ(receiver.ReadLine(10),
            "{\"note\":\"listening on 127.0.0.1:" + std::to_string(port) + "\"}");
  EXPECT_THAT(receiver.ReadLine(10), HasSubstr("\"t_s\"")) << "receiver did not start";
  r = RunProcess(InjectCmd({"net", "--set", "peer=127.0.0.1:" + std::to_string(port), "--rate",
                            "10MiB/s", "--duration", "1.5s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNearTarget(Summary(r.out), 10.0 * 1024 * 1024);
  EXPECT_THAT(Summary(r.out), HasSubstr("peer: 127.0.0.1:" + std::to_string(port)));
  EXPECT_EQ(receiver.Wait(10), 0);
  const std::string rest = receiver.ReadRest();
  EXPECT_GT(JsonNumber(Summary(rest), "achieved_rate"), 0) << rest;
  r = RunProcess(InjectCmd({"net", "--set", "peer=127.0.0.1:1", "--max", "--duration", "1s"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("connect to 127.0.0.1:1"));
  r = RunProcess(InjectCmd({"net", "--set", "peer=nohostport", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not loopback or a resolvable host:port"));
}

// A pair across agents without the agents: rank 0 publishes its endpoint as the agent would
// relay it, rank 1 gets it as --set endpoint=<hex> and streams to it at the rate.
TEST(ResourceInjectorsTest, NetPairSenderStreamsToWhatTheReceiverPublished) {
  Child receiver(InjectCmd({"net", "--set", "ranks=2", "--set", "rank=0", "--set",
                            "rendezvous_key=t/k", "--set", "bind=127.0.0.2", "--set",
                            "connections=2", "--rate", "16MiB/s", "--duration", "5s", "--json"}));
  const std::string publish = receiver.ReadLine(10);
  ASSERT_THAT(publish, HasSubstr("{\"rendezvous_publish\":{\"key\":\"t/k\",\"value_hex\":\""));
  const size_t at = publish.find("value_hex\":\"") + 12;
  const std::string hex = publish.substr(at, publish.find('"', at) - at);
  ProcessResult r = RunProcess(
      InjectCmd({"net", "--set", "ranks=2", "--set", "rank=1", "--set", "endpoint=" + hex, "--set",
                 "connections=2", "--rate", "16MiB/s", "--duration", "2s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNearTarget(Summary(r.out), 16.0 * 1024 * 1024);
  EXPECT_THAT(Summary(r.out), HasSubstr("pair: sending to the receiver at 127.0.0.2:"));
  EXPECT_EQ(receiver.Wait(10), 0);
  EXPECT_GT(JsonNumber(Summary(receiver.ReadRest()), "achieved_rate"), 0);
}

// receiver=second: rank 0 still listens and publishes, but it sends and rank 1 receives.
TEST(ResourceInjectorsTest, NetPairFlowsTowardsTheSecondNodeWhenAsked) {
  Child first(
      InjectCmd({"net", "--set", "ranks=2", "--set", "rank=0", "--set", "rendezvous_key=k", "--set",
                 "receiver=second", "--rate", "8MiB/s", "--duration", "2.5s", "--json"}));
  const std::string line = first.ReadLine(10);
  auto publish = injectors::protocol::RendezvousPublish::Parse(line);
  ASSERT_TRUE(publish.ok()) << line << ": " << publish.error();
  EXPECT_EQ(publish->key, "k");
  const std::string hex = injectors::protocol::HexEncode(publish->value);
  // A stranger on rank 0's port (its address is in the published value) gets no data.
  auto endpoint = injectors::DecodeNetEndpoint(publish->value);
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  const std::string& addr = endpoint->addresses.at(0);
  const int stranger = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1))));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stranger, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string wrong(32, 'f');
  ASSERT_EQ(send(stranger, wrong.data(), wrong.size(), 0), 32);
  char buf[64];
  EXPECT_EQ(recv(stranger, buf, sizeof buf, 0), 0) << "closed without a byte";
  close(stranger);
  ProcessResult r = RunProcess(
      InjectCmd({"net", "--set", "ranks=2", "--set", "rank=1", "--set", "receiver=second", "--set",
                 "endpoint=" + hex, "--rate", "8MiB/s", "--duration", "2s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNearTarget(Summary(r.out), 8.0 * 1024 * 1024);
  EXPECT_THAT(Summary(r.out), HasSubstr("pair: receiving from the sender at 127.0.0.1:"));
  EXPECT_EQ(first.Wait(10), 0);
  EXPECT_GT(JsonNumber(Summary(first.ReadRest()), "achieved_rate"), 0);
}

// kill -9 of one rank: the other does not hang on a dead peer, it fails (exit 1) within the
// 2 s it grants a peer that is merely being stopped at the same moment.
TEST(ResourceInjectorsTest, NetPairSenderFailsPromptlyWhenTheReceiverIsKilled) {
  Child receiver(InjectCmd({"net", "--set", "ranks=2", "--set", "rank=0", "--set",
                            "rendezvous_key=k", "--max", "--duration", "30s", "--json"}));
  const std::string publish = receiver.ReadLine(10);
  const size_t at = publish.find("value_hex\":\"") + 12;
  ASSERT_NE(at, std::string::npos + 12) << publish;
  Child sender(InjectCmd({"net", "--set", "ranks=2", "--set", "rank=1", "--set",
                          "endpoint=" + publish.substr(at, publish.find('"', at) - at), "--max",
                          "--duration", "30s", "--json"}));
  ASSERT_THAT(sender.ReadLine(10), HasSubstr("\"t_s\"")) << "sender did not start";
  kill(receiver.pid(), SIGKILL);
  EXPECT_EQ(receiver.Wait(5), -SIGKILL);
  EXPECT_EQ(sender.Wait(10), 1);
}

// A listener that does not answer with the token (not the receiver) gets no flood.
TEST(ResourceInjectorsTest, NetPairSenderRefusesAListenerWithoutTheToken) {
  const int port = FreeLoopbackPort();
  Child plain(InjectCmd({"net", "--set", "role=receive", "--set", "port=" + std::to_string(port),
                         "--max", "--duration", "6s", "--json"}));
  EXPECT_THAT(plain.ReadLine(10), HasSubstr("{\"note\":\"listening on "));
  EXPECT_THAT(plain.ReadLine(10), HasSubstr("\"t_s\"")) << "receiver did not start";
  std::string hex;
  const std::string text =
      "codl-net1 0123456789abcdef0123456789abcdef 127.0.0.1:" + std::to_string(port);
  for (unsigned char c : text) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  ProcessResult r = RunProcess(InjectCmd(
      {"net", "--set", "ranks=2", "--set", "rank=1", "--set", "endpoint=" + hex, "--max"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no address of rank 0 answered: 127.0.0.1:" + std::to_string(port) +
                               ": connected, but it did not answer with rank 0's token"));
  EXPECT_EQ(plain.Wait(10), 0);
  // It drained the 32-byte token rank 1 presented, and nothing more.
  EXPECT_LT(JsonNumber(Summary(plain.ReadRest()), "achieved_rate"), 32);
}

TEST(ResourceInjectorsTest, NetPairOptionsAreChecked) {
  ProcessResult r = RunProcess(InjectCmd({"net", "--set", "ranks=3", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("a net antagonist is one receiver/sender pair"));
  r = RunProcess(InjectCmd({"net", "--set", "ranks=2", "--set", "rank=1", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("rank 1 of 2 needs endpoint"));
  r = RunProcess(
      InjectCmd({"net", "--set", "ranks=2", "--set", "rank=1", "--set", "endpoint=6162", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("option 'endpoint': not a net endpoint"));
  r = RunProcess(InjectCmd({"net", "--set", "ranks=2", "--set", "rendezvous_key=k", "--set",
                            "peer=127.0.0.1:9", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("option 'peer' does not apply to a pair"));
}

}  // namespace
}  // namespace codl::testing
