// The rdma injector through the real codl-inject binary. Everywhere: --help, --list (with the
// exact reason it cannot run), and the refusal to run without a device. Where the capability
// probe finds a usable RDMA port (an InfiniBand or RoCE NIC, or rdma_rxe over an Ethernet
// interface: `rdma link add rxe0 type rxe netdev eth0`), the flood itself: loopback through the
// device at a rate, and a pair of two processes wired through the published endpoint.
// Elsewhere those SKIP with the probe's reason (this repository's VM and CI have no RDMA device
// and cannot load rdma_rxe).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "injectors/core/registry.h"
#include "tests/injectors/test_util.h"

namespace codl::testing {
namespace {

using ::testing::HasSubstr;

std::string RdmaUnavailable() {
  return injectors::CreateInjector("rdma")->Unsupported(injectors::DetectHost({"/tmp"})).message();
}

std::string SummaryOf(const std::string& out) {
  for (const auto& line : Lines(out)) {
    if (JsonHas(line, "summary")) return line;
  }
  return "";
}

std::string PublishedHex(const std::string& line) {
  const size_t at = line.find("value_hex\":\"");
  if (at == std::string::npos) return "";
  return line.substr(at + 12, line.find('"', at + 12) - at - 12);
}

TEST(RdmaCliTest, HelpListsTheOptionsAndWhetherItRunsHere) {
  ProcessResult r = RunProcess(CodlInjectCmd({"rdma", "--help"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* option : {"  op ", "  block ", "  queue_depth ", "  connections ", "  device ",
                             "  port ", "  gid_index ", "  endpoint ", "  exchange_port "}) {
    EXPECT_THAT(r.out, HasSubstr(option));
  }
  EXPECT_THAT(r.out, HasSubstr("[-1, 255]"));
  EXPECT_THAT(r.out, HasSubstr("unit: bytes/s"));
  const std::string why = RdmaUnavailable();
  EXPECT_THAT(r.out,
              HasSubstr(why.empty() ? "available here: yes" : "available here: no — " + why));
}

TEST(RdmaCliTest, ListSaysExactlyWhyOrWhichPorts) {
  const std::string why = RdmaUnavailable();
  ProcessResult r = RunProcess(CodlInjectCmd({"--list"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string line;
  for (const auto& l : Lines(r.out)) {
    if (l.rfind("rdma ", 0) == 0) line = l;
  }
  ASSERT_FALSE(line.empty()) << r.out;
  if (why.empty()) {
    EXPECT_THAT(line, HasSubstr("network bandwidth (RDMA verbs: "));
    EXPECT_THAT(line, HasSubstr(" port "));
    EXPECT_THAT(line, HasSubstr("available"));
  } else {
    EXPECT_THAT(line, HasSubstr("unavailable: " + why));
  }
  if (!std::filesystem::is_directory("/sys/class/infiniband")) {
    EXPECT_TRUE(why == "no device (/sys/class/infiniband absent: no RDMA driver loaded)" ||
                why == "built without RDMA support (install libibverbs-dev and rebuild)")
        << why;
  }
  ProcessResult json = RunProcess(CodlInjectCmd({"--list", "--json"}));
  EXPECT_THAT(json.out, HasSubstr("{\"name\":\"rdma\","));
  EXPECT_THAT(json.out, HasSubstr("\"available\":" + std::string(why.empty() ? "true" : "false") +
                                  ",\"reason\":\"" + why + "\"}"));
}

TEST(RdmaCliTest, RefusesToRunWithoutADeviceAndSaysWhy) {
  const std::string why = RdmaUnavailable();
  if (why.empty()) GTEST_SKIP() << "this host has an RDMA port; the device tests run instead";
  ProcessResult r = RunProcess(CodlInjectCmd({"rdma", "--max", "--duration", "1s"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("rdma is unavailable here: " + why));
  // Options are still checked first (usage errors, exit 2), as on a host that has a device.
  r = RunProcess(CodlInjectCmd({"rdma", "--set", "ranks=2", "--set", "rank=1", "--max"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("rdma: rank 1 of 2 needs endpoint"));
}

// ---- with a device ---------------------------------------------------------------------------

#define CODL_NEEDS_RDMA()                                                                  \
  if (std::string why = RdmaUnavailable(); !why.empty()) {                                 \
    GTEST_SKIP() << "no usable RDMA port here (the capability probe says: " << why << ")"; \
  }

TEST(RdmaDeviceTest, LoopbackHoldsTheRateWithWritesAndSends) {
  CODL_NEEDS_RDMA();
  for (const char* op : {"write", "send"}) {
    ProcessResult r = RunProcess(
        CodlInjectCmd({"rdma", "--set", std::string("op=") + op, "--set", "connections=2", "--rate",
                       "64MiB/s", "--duration", "2s", "--json"}));
    ASSERT_EQ(r.exit_code, 0) << op << ": " << r.err;
    const std::string s = SummaryOf(r.out);
    const double ratio = JsonNumber(s, "achieved_rate") / (64.0 * 1024 * 1024);
    EXPECT_LE(ratio, 1.1) << s;
    EXPECT_GE(ratio, 0.85) << s;
    EXPECT_THAT(s, HasSubstr("loopback on "));
  }
}

TEST(RdmaDeviceTest, CalibrateFindsAPeak) {
  CODL_NEEDS_RDMA();
  ProcessResult r =
      RunProcess(CodlInjectCmd({"rdma", "--calibrate", "--duration", "1.5s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(JsonNumber(SummaryOf(r.out), "achieved_rate"), 0) << r.out;
}

// Two processes, as two agents would start them: rank 0 publishes, rank 1 joins with the
// endpoint; both count the same flow (sender: acknowledged, receiver: arrived).
TEST(RdmaDeviceTest, PairStreamsTowardsTheReceiverThroughThePublishedEndpoint) {
  CODL_NEEDS_RDMA();
  Child rank0(
      CodlInjectCmd({"rdma", "--set", "ranks=2", "--set", "rank=0", "--set", "rendezvous_key=t/k",
                     "--set", "connections=2", "--set", "connect_timeout=20s", "--rate", "32MiB/s",
                     "--duration", "4s", "--json"}));
  const std::string publish = rank0.ReadLine(20);
  ASSERT_THAT(publish, HasSubstr("{\"rendezvous_publish\":{\"key\":\"t/k\",\"value_hex\":\""));
  ProcessResult r = RunProcess(CodlInjectCmd(
      {"rdma", "--set", "ranks=2", "--set", "rank=1", "--set", "endpoint=" + PublishedHex(publish),
       "--set", "connections=2", "--rate", "32MiB/s", "--duration", "3s", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sent = SummaryOf(r.out);
  EXPECT_THAT(sent, HasSubstr("pair: sending to rank 0 at "));
  EXPECT_NEAR(JsonNumber(sent, "achieved_rate") / (32.0 * 1024 * 1024), 1, 0.15) << sent;
  EXPECT_EQ(rank0.Wait(15), 0);
  const std::string received = SummaryOf(rank0.ReadRest());
  EXPECT_THAT(received, HasSubstr("pair: receiving from rank 1"));
  EXPECT_GT(JsonNumber(received, "achieved_rate"), 0) << received;
}

// SIGTERM mid-flood: the QPs, CQs, MRs, PD and device are released and the tool exits 0.
TEST(RdmaDeviceTest, SigtermEndsCleanly) {
  CODL_NEEDS_RDMA();
  Child c(CodlInjectCmd({"rdma", "--max", "--duration", "30s", "--json"}));
  ASSERT_THAT(c.ReadLine(10), HasSubstr("\"t_s\""));
  kill(c.pid(), SIGTERM);
  EXPECT_EQ(c.Wait(5), 0);
}

}  // namespace
}  // namespace codl::testing
