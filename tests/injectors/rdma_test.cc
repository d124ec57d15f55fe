// The rdma injector's pure parts (no device needed, so they run everywhere): the connection
// info both ranks exchange, the capability probe and port/GID choice on a fake sysfs tree, and
// the option rules. The verbs flood itself is exercised by rdma_cli_test.cc where a device is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "injectors/core/protocol.h"
#include "injectors/core/registry.h"
#include "injectors/net/net_endpoint.h"
#include "injectors/net/net_socket.h"
#include "injectors/rdma/rdma_exchange.h"
#include "injectors/rdma/rdma_host.h"
#include "injectors/rdma/rdma_wire.h"
#include "tests/injectors/test_util.h"

namespace codl::injectors::rdma {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

ConnInfo SampleInfo() {
  ConnInfo c;
  c.lid = 7;
  c.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  c.mtu = 1024;
  c.rkey = 0xdeadbeef;
  c.addr = 0x7f0012345000;
  c.length = 65536;
  c.qps = {{17, 0xabcdef}, {18, 0}};
  return c;
}

TEST(RdmaWireTest, ConnectionInfoRoundTrips) {
  const ConnInfo c = SampleInfo();
  const std::string text = EncodeConnInfo(c);
  EXPECT_EQ(text,
            "lid=7 gid=00000000000000000000ffff0a000002 mtu=1024 rkey=deadbeef addr=7f0012345000 "
            "len=65536 qps=17:11259375,18:0");
  auto back = DecodeConnInfo(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->lid, c.lid);
  EXPECT_EQ(back->gid, c.gid);
  EXPECT_EQ(back->mtu, 1024);
  EXPECT_EQ(back->rkey, c.rkey);
  EXPECT_EQ(back->addr, c.addr);
  EXPECT_EQ(back->length, c.length);
  ASSERT_EQ(back->qps.size(), 2u);
  EXPECT_EQ(back->qps[0].qpn, 17u);
  EXPECT_EQ(back->qps[0].psn, 0xabcdefu);
  EXPECT_TRUE(back->has_gid());
  EXPECT_FALSE(ConnInfo{}.has_gid()) << "all zeros: route by LID";
}

TEST(RdmaWireTest, ConnectionInfoErrorsNameTheField) {
  const std::string good = EncodeConnInfo(SampleInfo());
  auto with = [&](const std::string& key, const std::string& value) {
    std::string t = good;
    const size_t at = t.find(key + "=") + key.size() + 1;
    t.replace(at, t.find(' ', at) == std::string::npos ? std::string::npos : t.find(' ', at) - at,
              value);
    auto r = DecodeConnInfo(t);
    return r.ok() ? std::string("ok") : r.error();
  };
  EXPECT_EQ(with("mtu", "300"),
            "rdma connection info: 'mtu': 300 is not 256, 512, 1024, 2048 or 4096");
  EXPECT_EQ(with("qps", "1:16777216"),
            "rdma connection info: 'qps': '1:16777216' is not <qpn>:<psn>,... with 24-bit "
            "numbers");
  EXPECT_EQ(with("qps", "5"),
            "rdma connection info: 'qps': '5' is not <qpn>:<psn>,... with 24-bit numbers");
  EXPECT_EQ(with("lid", "65536"), "rdma connection info: 'lid': '65536' is not a 16-bit LID");
  EXPECT_EQ(with("gid", "abc"), "rdma connection info: 'gid': 'abc' is not 32 hex characters");
  EXPECT_EQ(with("rkey", "1ffffffff"),
            "rdma connection info: 'rkey': '1ffffffff' is not a 32-bit hex key");
  EXPECT_EQ(DecodeConnInfo("lid=1").error(), "rdma connection info: missing 'gid'");
  EXPECT_EQ(DecodeConnInfo(good + " foo=1").error(), "rdma connection info: unknown field 'foo'");
  EXPECT_EQ(DecodeConnInfo(good + " junk").error(),
            "rdma connection info: 'junk' is not key=value");
}

TEST(RdmaWireTest, EndpointCarriesTokenAddressesAndRankZerosHalf) {
  Endpoint e{"0123456789abcdef0123456789abcdef", {"10.0.0.1:4000", "[fd00::1]:4000"}, SampleInfo()};
  const std::string text = EncodeEndpoint(e);
  EXPECT_EQ(text.rfind("codl-rdma1 0123456789abcdef0123456789abcdef 10.0.0.1:4000,[fd00::1]:4000 "
                       "lid=7 ",
                       0),
            0u)
      << text;
  auto back = DecodeEndpoint(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->token, e.token);
  EXPECT_EQ(back->addresses, e.addresses);
  EXPECT_EQ(EncodeConnInfo(back->info), EncodeConnInfo(e.info));
  const std::string shape =
      "not an rdma endpoint (expected 'codl-rdma1 <token> <host:port>,... <connection info>')";
  EXPECT_EQ(DecodeEndpoint("").error(), shape);
  EXPECT_EQ(DecodeEndpoint("codl-net1 " + e.token + " a:1").error(), shape);
  EXPECT_EQ(DecodeEndpoint("codl-rdma1 " + e.token + " lid=1").error(), shape);
  EXPECT_EQ(DecodeEndpoint("codl-rdma1 0123 a:1 " + EncodeConnInfo(e.info)).error(),
            "rdma endpoint token must be 32 hex characters");
  EXPECT_EQ(DecodeEndpoint("codl-rdma1 " + e.token + " a:1 lid=1").error(),
            "rdma connection info: missing 'gid'");
}

TEST(RdmaWireTest, MtuNumbering) {
  EXPECT_EQ(MtuBytes(1), 256);
  EXPECT_EQ(MtuBytes(5), 4096);
  EXPECT_EQ(MtuBytes(0), 0);
  EXPECT_EQ(MtuEnum(2048), 4);
  EXPECT_EQ(MtuEnum(1500), -1);
}

// A sysfs tree as the kernel lays it out: an active InfiniBand port (mlx5_0) and a down RoCE
// port (rxe0) with link-local and IPv4-mapped GIDs, each as RoCE v1 and v2, and an unused entry.
class FakeSysfs {
 public:
  FakeSysfs() : root_(dir_.path() + "/infiniband") {
    Port("mlx5_0", 1, "4: ACTIVE", "InfiniBand");
    Gid("mlx5_0", 1, 0, "fe80:0000:0000:0000:0202:c9ff:fe00:0001", "IB/RoCE v1");
    Port("rxe0", 1, "1: DOWN", "Ethernet");
    Gid("rxe0", 1, 0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1");
    Gid("rxe0", 1, 1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2");
    Gid("rxe0", 1, 2, "0000:0000:0000:0000:0000:ffff:0a00:0002", "IB/RoCE v1");
    Gid("rxe0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:0002", "RoCE v2");
    Gid("rxe0", 1, 4, "0000:0000:0000:0000:0000:0000:0000:0000", "");
  }
  const std::string& root() const { return root_; }
  void Write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  void Port(const std::string& dev, int n, const std::string& state, const std::string& ll) {
    const fs::path d = fs::path(root_) / dev / "ports" / std::to_string(n);
    Write(d / "state", state);
    Write(d / "link_layer", ll);
  }
  void Gid(const std::string& dev, int n, int i, const std::string& gid, const std::string& type) {
    const fs::path d = fs::path(root_) / dev / "ports" / std::to_string(n);
    Write(d / "gids" / std::to_string(i), gid);
    if (!type.empty()) Write(d / "gid_attrs" / "types" / std::to_string(i), type);
  }

 private:
  codl::testing::TempDir dir_;
  std::string root_;
};

VerbsDeviceLister Lists(std::vector<std::string> names) {
  return [names] { return Result<std::vector<std::string>>(names); };
}

TEST(RdmaHostTest, NoDriverAndNoDeviceAreSaid) {
  codl::testing::TempDir dir;
  const std::string absent = dir.path() + "/infiniband";
  EXPECT_EQ(ReadPorts(absent).error(), "no device (" + absent + " absent: no RDMA driver loaded)");
  fs::create_directories(absent);
  EXPECT_EQ(ReadPorts(absent).error(), "no device (" + absent + " is empty)");
  bool asked = false;
  const Availability a = Probe(absent, [&] {
    asked = true;
    return Result<std::vector<std::string>>(std::vector<std::string>{});
  });
  EXPECT_EQ(a.reason, "no device (" + absent + " is empty)");
  EXPECT_FALSE(asked) << "libibverbs is asked only when sysfs lists a device";
}

TEST(RdmaHostTest, PortsComeFromSysfs) {
  FakeSysfs sys;
  auto ports = ReadPorts(sys.root());
  ASSERT_TRUE(ports.ok()) << ports.error();
  ASSERT_EQ(ports->size(), 2u);
  EXPECT_EQ(DescribePorts(*ports),
            "mlx5_0 port 1 (InfiniBand, ACTIVE), rxe0 port 1 (Ethernet, DOWN)");
  EXPECT_TRUE((*ports)[0].active());
  EXPECT_TRUE((*ports)[1].ethernet());
}

TEST(RdmaHostTest, ProbeSaysWhyInTheOrderChecked) {
  FakeSysfs sys;
  EXPECT_EQ(
      Probe(sys.root(),
            [] { return Result<std::vector<std::string>>(Err("libibverbs.so.1 does not load")); })
          .reason,
      "libibverbs.so.1 does not load");
  EXPECT_EQ(Probe(sys.root(), Lists({})).reason,
            "libibverbs finds no device (no provider for mlx5_0, rxe0: Debian: ibverbs-providers)");
  EXPECT_EQ(Probe(sys.root(), Lists({"rxe0"})).reason,
            "no active port (rxe0 port 1 (Ethernet, DOWN))");
  const Availability ok = Probe(sys.root(), Lists({"mlx5_0", "rxe0"}));
  EXPECT_EQ(ok.reason, "");
  EXPECT_EQ(DescribePorts(ok.ports),
            "mlx5_0 port 1 (InfiniBand, ACTIVE), rxe0 port 1 (Ethernet, DOWN)");
}

// siw (software iWARP) lists like a RoCE port, but its QPs cannot be connected by hand.
TEST(RdmaHostTest, IwarpPortsAreListedButNotUsed) {
  FakeSysfs sys;
  sys.Write(fs::path(sys.root()) / "siw0" / "node_type", "4: RNIC");
  sys.Port("siw0", 1, "4: ACTIVE", "Ethernet");
  sys.Write(fs::path(sys.root()) / "mlx5_0" / "node_type", "1: CA");
  const std::string iwarp = "siw0 port 1 (Ethernet, iWARP, ACTIVE)";
  EXPECT_EQ(Probe(sys.root(), Lists({"rxe0", "siw0"})).reason,
            "no usable port (rxe0 port 1 (Ethernet, DOWN), " + iwarp +
                ": iWARP queue pairs connect only through rdma_cm, which this flood does not "
                "use)");
  const Availability a = Probe(sys.root(), Lists({"mlx5_0", "rxe0", "siw0"}));
  EXPECT_EQ(a.reason, "");
  EXPECT_EQ(ChoosePort(a.ports, "", 0)->Name(), "mlx5_0 port 1");
  EXPECT_EQ(ChoosePort(a.ports, "siw0", 0).error(),
            "rdma: siw0 port 1 is iWARP: its queue pairs connect only through rdma_cm, which "
            "this flood does not use (choose an InfiniBand or RoCE port)");
}

TEST(RdmaHostTest, TheFirstActivePortOrTheOneAskedFor) {
  FakeSysfs sys;
  const auto ports = *ReadPorts(sys.root());
  EXPECT_EQ(ChoosePort(ports, "", 0)->Name(), "mlx5_0 port 1");
  EXPECT_EQ(ChoosePort(ports, "mlx5_0", 1)->Name(), "mlx5_0 port 1");
  EXPECT_EQ(ChoosePort(ports, "rxe0", 0).error(),
            "rdma: no active port among rxe0 port 1 (Ethernet, DOWN)");
  EXPECT_EQ(ChoosePort(ports, "nosuch", 0).error(),
            "option 'device': no RDMA device 'nosuch' here (devices: mlx5_0, rxe0)");
  EXPECT_EQ(ChoosePort(ports, "mlx5_0", 2).error(),
            "option 'port': mlx5_0 has no port 2 (ports: 1)");
}

TEST(RdmaHostTest, RoceTakesAnIpv4MappedV2GidInfiniBandRoutesByLid) {
  FakeSysfs sys;
  const auto ports = *ReadPorts(sys.root());
  const Port& ib = ports[0];
  const Port& roce = ports[1];
  const auto table = ReadGids(sys.root(), roce);
  ASSERT_EQ(table.size(), 4u) << "the all-zero entry is unused";
  EXPECT_EQ(table[3].type, "RoCE v2");
  EXPECT_EQ(*ChooseGid(table, roce, -1), 3);
  EXPECT_EQ(*ChooseGid(table, roce, 1), 1) << "an explicit index wins";
  EXPECT_EQ(ChooseGid(table, roce, 4).error(),
            "option 'gid_index': rxe0 port 1 has no GID at index 4 (it has 0, 1, 2, 3)");
  EXPECT_EQ(*ChooseGid({table[0], table[1]}, roce, -1), 1) << "RoCE v2 over v1";
  EXPECT_EQ(*ChooseGid({table[0]}, roce, -1), 0) << "v1 only: the first GID";
  EXPECT_EQ(ChooseGid({}, roce, -1).error(),
            "rdma: rxe0 port 1 (Ethernet) has no GID: give its network interface an IP "
            "address, or set gid_index");
  EXPECT_EQ(*ChooseGid(ReadGids(sys.root(), ib), ib, -1), -1);
  EXPECT_EQ(*ChooseGid(ReadGids(sys.root(), ib), ib, 0), 0);
}

// The pair's TCP exchange on loopback, with the QP transitions replaced by recorders: each rank
// connects to exactly the other's half, and rank 1 hears rank 0's refusal.
class RdmaExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    listen_fd_ = ListenTcp("127.0.0.1", 0, 4, &port_, &why);
    ASSERT_GE(listen_fd_, 0) << why;
    rank0_.token = NewNetToken();
    rank0_.addresses = {"127.0.0.1:" + std::to_string(port_)};
    rank0_.info = SampleInfo();
  }
  void TearDown() override { close(listen_fd_); }

  int listen_fd_ = -1, port_ = 0;
  Endpoint rank0_;
};

TEST_F(RdmaExchangeTest, EachRankConnectsToTheOthersHalf) {
  ConnInfo rank1_info = SampleInfo();
  rank1_info.lid = 9;
  rank1_info.qps = {{100, 1}, {101, 2}};
  std::string seen_by_0, seen_by_1;
  Result<int> fd0 = Err("not run");
  std::thread rank0([&] {
    fd0 = AcceptRank1(listen_fd_, rank0_.token, 10, StopToken(), [&](const ConnInfo& r) {
      seen_by_0 = EncodeConnInfo(r);
      return Status::Ok();
    });
  });
  // A stranger first: it does not know the token, gets nothing and does not end rank 0's wait.
  std::string why;
  EXPECT_EQ(ConnectVerified(rank0_.addresses[0], std::string(32, 'f'), &why), -1);
  EXPECT_THAT(why, HasSubstr("did not answer with rank 0's token"));
  std::string peer;
  auto fd1 = JoinRank0(
      rank0_, rank1_info,
      [&](const ConnInfo& r) {
        seen_by_1 = EncodeConnInfo(r);
        return Status::Ok();
      },
      &peer);
  rank0.join();
  ASSERT_TRUE(fd1.ok()) << fd1.error();
  ASSERT_TRUE(fd0.ok()) << fd0.error();
  EXPECT_EQ(seen_by_0, EncodeConnInfo(rank1_info));
  EXPECT_EQ(seen_by_1, EncodeConnInfo(rank0_.info));
  EXPECT_EQ(peer, rank0_.addresses[0]);
  // The connection stays open; its close is how rank 0 learns that rank 1 is gone.
  close(*fd1);
  EXPECT_EQ(ReadLine(*fd0, 16, 2000, nullptr), "");
  char c;
  EXPECT_EQ(recv(*fd0, &c, 1, MSG_DONTWAIT), 0);
  close(*fd0);
}

TEST_F(RdmaExchangeTest, RankZerosRefusalReachesRankOne) {
  Result<int> fd0 = Err("not run");
  std::thread rank0([&] {
    fd0 = AcceptRank1(listen_fd_, rank0_.token, 10, StopToken(), [](const ConnInfo&) -> Status {
      return Err(
          "rdma: the peer has 1 queue pairs, this side 2: give both ranks the same "
          "connections");
    });
  });
  bool connected = false;
  std::string peer;
  auto fd1 = JoinRank0(
      rank0_, SampleInfo(),
      [&](const ConnInfo&) {
        connected = true;
        return Status::Ok();
      },
      &peer);
  rank0.join();
  EXPECT_FALSE(fd0.ok());
  ASSERT_FALSE(fd1.ok());
  EXPECT_EQ(fd1.error(),
            "rdma: rank 0 refused: rdma: the peer has 1 queue pairs, this side 2: give both "
            "ranks the same connections");
  EXPECT_FALSE(connected) << "rank 1 connects only after rank 0 is ready";
}

TEST_F(RdmaExchangeTest, RankZeroGivesUpAfterTheTimeoutOrAStop) {
  auto never = [](const ConnInfo&) { return Status::Ok(); };
  EXPECT_EQ(AcceptRank1(listen_fd_, rank0_.token, 0.2, StopToken(), never).error(),
            "rdma: rank 1 did not connect within connect_timeout (200.0 ms)");
  StopSource stop;
  stop.RequestStop();
  EXPECT_EQ(AcceptRank1(listen_fd_, rank0_.token, 10, stop.token(), never).error(),
            "stopped during setup");
  Endpoint nobody = rank0_;
  nobody.addresses = {"127.0.0.1:1"};
  std::string peer;
  EXPECT_THAT(JoinRank0(nobody, SampleInfo(), never, &peer).error(),
              HasSubstr("rdma: no address of rank 0 answered: 127.0.0.1:1: connect: "));
}

std::string HexEndpoint(int qps) {
  ConnInfo c = SampleInfo();
  c.qps.resize(static_cast<size_t>(qps), QpInfo{5, 6});
  const std::string v = EncodeEndpoint({std::string(32, 'a'), {"127.0.0.1:1"}, c});
  return injectors::protocol::HexEncode(v);
}

TEST(RdmaOptionsTest, PairRulesAndRanges) {
  EXPECT_EQ(ValidateOptions("rdma", {}).message(), "");
  EXPECT_THAT(ValidateOptions("rdma", {{"ranks", "3"}}).message(),
              HasSubstr("rdma: ranks 3: an rdma antagonist is one receiver/sender pair"));
  EXPECT_EQ(ValidateOptions("rdma", {{"ranks", "2"}, {"rank", "2"}}).message(),
            "option 'rank': 2 must be less than ranks (2)");
  EXPECT_THAT(ValidateOptions("rdma", {{"ranks", "2"}}).message(),
              HasSubstr("rdma: rank 0 of 2 publishes its endpoint for rank 1: set rendezvous_key"));
  EXPECT_EQ(ValidateOptions("rdma", {{"ranks", "2"}, {"rendezvous_key", "k"}}).message(), "");
  EXPECT_THAT(ValidateOptions("rdma", {{"ranks", "2"}, {"rank", "1"}}).message(),
              HasSubstr("rdma: rank 1 of 2 needs endpoint"));
  EXPECT_EQ(ValidateOptions("rdma", {{"ranks", "2"}, {"rank", "1"}, {"endpoint", "zz"}}).message(),
            "option 'endpoint': invalid hex character 'z' at offset 0");
  const std::string not_rdma = injectors::protocol::HexEncode("codl-net1 x a:1");
  EXPECT_THAT(
      ValidateOptions("rdma", {{"ranks", "2"}, {"rank", "1"}, {"endpoint", not_rdma}}).message(),
      HasSubstr("option 'endpoint': not an rdma endpoint"));
  EXPECT_EQ(ValidateOptions(
                "rdma",
                {{"ranks", "2"}, {"rank", "1"}, {"endpoint", HexEndpoint(2)}, {"connections", "2"}})
                .message(),
            "");
  EXPECT_EQ(ValidateOptions("rdma", {{"ranks", "2"}, {"rank", "1"}, {"endpoint", HexEndpoint(2)}})
                .message(),
            "option 'endpoint': rank 0 opened 2 queue pairs, option 'connections' is 1: give both "
            "ranks the same options");
  EXPECT_EQ(ValidateOption("rdma", "gid_index", "256").message(),
            "option 'gid_index': 256 is out of range [-1, 255]");
  EXPECT_EQ(ValidateOption("rdma", "port", "-1").message(),
            "option 'port': -1 is out of range [0, 255]");
  EXPECT_EQ(ValidateOption("rdma", "queue_depth", "0").message(),
            "option 'queue_depth': 0 is out of range [1, 1024]");
  EXPECT_EQ(ValidateOption("rdma", "connections", "65").message(),
            "option 'connections': 65 is out of range [1, 64]");
  EXPECT_THAT(ValidateOption("rdma", "op", "read").message(), HasSubstr("write, send"));
  EXPECT_THAT(ValidateOption("rdma", "block", "32").message(), HasSubstr("out of range"));
}

TEST(RdmaOptionsTest, CollectiveLikeNetWithEndpointAsTheRendezvousOption) {
  const Descriptor* d = FindDescriptor("rdma");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->capabilities.collective);
  EXPECT_EQ(d->capabilities.rendezvous_option, "endpoint");
  EXPECT_EQ(d->unit, "bytes/s");
  EXPECT_EQ(CheckDescriptorContract(*d).message(), "");
}

}  // namespace
}  // namespace codl::injectors::rdma
