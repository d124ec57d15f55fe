// Issue 30, item 1: connection caps on the daemons' TCP listeners, token and TLS. A real
// codl-controller serves 127.0.0.1 with small caps; callers open real gRPC connections (each
// channel its own), raw sockets play the flood that never sends a byte.
// - A non-admin identity may hold max_connections_per_caller connections that made calls; the
//   next one's call is refused naming the cap, an admin still gets in, and a connection the
//   caller closes frees its slot. All non-admin callers together: max_connections.
// - Connections that made no authorized call are capped per IP (the oldest closed for the new)
//   and closed after handshake_timeout; an admin connection gets in during the flood.
// - codl_controller_connections counts TCP connections by role.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "codl/v1/controller.grpc.pb.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/connection_registry.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using namespace codl::testing;
using ::testing::HasSubstr;

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the server has closed `fd`: end of stream or an error. Data (HTTP/2 settings) or
// nothing to read means open.
bool ClosedByServer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) == 0) return false;
  char buf[512];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
  }
  return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

int CountOpen(const std::vector<int>& fds) {
  int open = 0;
  for (int fd : fds) open += !ClosedByServer(fd);
  return open;
}

// GET /metrics over plain HTTP/1.0; "" on failure.
std::string MetricsText(int port) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  std::string resp;
  if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) resp.append(buf, n);
  }
  close(fd);
  return resp;
}

class TcpConnectionCaps : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("codl-tcp-caps");
    port_ = FreeLoopbackPort();
    metrics_port_ = FreeLoopbackPort();
  }
  void TearDown() override {
    controller_ = Process();
    if (!dir_.empty()) RemoveTree(dir_);
  }

  // Starts codl-controller on host_ (loopback): with tokens (plaintext, --insecure) or mutual TLS.
  void StartController(const std::string& caps, bool tls) {
    std::string yaml =
        "listen: \"" + Address() + "\"" +
        "\ndatabase: c.db\nmetrics_listen: 127.0.0.1:" + std::to_string(metrics_port_) + "\n" +
        caps;
    std::vector<std::string> argv = {Bin("codl-controller"), "--config", dir_ + "/controller.yaml"};
    if (tls) {
      const std::string script = SourceDir() + "/scripts/issue-certs.sh";
      for (const std::string args :
           {"ca", "controller 127.0.0.1", "user-read alice", "user-read bob", "admin ops"}) {
        ASSERT_EQ(std::system((script + " " + dir_ + "/certs " + args + " >/dev/null").c_str()), 0)
            << args;
      }
      yaml += "tls: {ca: certs/ca.pem, cert: certs/controller.pem, key: certs/controller.key}\n";
    } else {
      WriteSecretFile(dir_ + "/tokens", "user-read alice " + rpc::Sha256Hex("alice-token") +
                                            "\nuser-read bob " + rpc::Sha256Hex("bob-token") +
                                            "\nadmin ops " + rpc::Sha256Hex("admin-token") + "\n");
      yaml += "tokens_file: tokens\n";
      argv.push_back("--insecure");
    }
    tls_ = tls;
    WriteFile(dir_ + "/controller.yaml", yaml);
    controller_ = Process(argv, dir_ + "/controller.log");
    ASSERT_TRUE(WaitUntil([&] { return List(NewChannel("admin"), "admin").ok(); }, 60)) << Log();
  }

  // A channel with a connection of its own (no subchannel shared with other channels), as
  // caller `who` ("alice", "bob", "admin"): its certificate under TLS.
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& who) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    if (tls_) {
      const std::string name = who == "admin" ? "admin-ops" : "user-read-" + who;
      grpc::SslCredentialsOptions o;
      o.pem_root_certs = ReadFile(dir_ + "/certs/ca.pem");
      o.pem_cert_chain = ReadFile(dir_ + "/certs/" + name + ".pem");
      o.pem_private_key = ReadFile(dir_ + "/certs/" + name + ".key");
      creds = grpc::SslCredentials(o);
    }
    return grpc::CreateCustomChannel(Address(), creds, args);
  }
  grpc::Status List(const std::shared_ptr<grpc::Channel>& ch, const std::string& who) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!tls_) c.AddMetadata("authorization", "Bearer " + who + "-token");
    v1::ListAgentsReply reply;
    return v1::Controller::NewStub(ch)->ListAgents(&c, v1::ListAgentsRequest(), &reply);
  }
  bool GaugeIs(const std::string& role, int n) {
    return MetricsText(metrics_port_)
               .find("codl_controller_connections{role=\"" + role + "\"} " + std::to_string(n) +
                     "\n") != std::string::npos;
  }
  std::string Log() { return ReadFile(dir_ + "/controller.log"); }
  std::string Address() const { return host_ + ":" + std::to_string(port_); }

  // max_connections_per_caller 3 for alice; bob's second connection hits max_connections 4.
  void ExpectCallerCaps(int per_caller, int total) {
    std::vector<std::shared_ptr<grpc::Channel>> alice;
    for (int i = 0; i < per_caller; ++i) {
      alice.push_back(NewChannel("alice"));
      ASSERT_TRUE(List(alice.back(), "alice").ok()) << i << "\n" << Log();
    }
    const grpc::Status over = List(NewChannel("alice"), "alice");
    EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();
    EXPECT_THAT(over.error_message(),
                HasSubstr("user-read/alice already has " + std::to_string(per_caller) +
                          " connections open (max_connections_per_caller " +
                          std::to_string(per_caller) + ")"));
    auto admin = NewChannel("admin");
    EXPECT_TRUE(List(admin, "admin").ok()) << "admins are not counted\n" << Log();
    EXPECT_TRUE(List(alice.front(), "alice").ok()) << "admitted connections go on";
    std::vector<std::shared_ptr<grpc::Channel>> bob;
    for (int i = per_caller; i < total; ++i) {
      bob.push_back(NewChannel("bob"));
      ASSERT_TRUE(List(bob.back(), "bob").ok()) << i << "\n" << Log();
    }
    const grpc::Status full = List(NewChannel("bob"), "bob");
    EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << full.error_message();
    EXPECT_THAT(full.error_message(), HasSubstr("connections of non-admin callers are open "
                                                "(max_connections " +
                                                std::to_string(total) + ")"));
    EXPECT_TRUE(List(NewChannel("admin"), "admin").ok()) << "the admins' share is kept";
    EXPECT_TRUE(WaitUntil([&] { return GaugeIs("user-read", total); }, 20))
        << MetricsText(metrics_port_);
    // Closing a connection frees its slot: the caller's next new connection is admitted (the
    // server notices the close asynchronously: poll).
    alice.pop_back();
    EXPECT_TRUE(WaitUntil([&] { return List(NewChannel("alice"), "alice").ok(); }, 30)) << Log();
    EXPECT_THAT(Log(), HasSubstr("refused a call: user-read/alice already has"));
  }

  // `n` connections that never send a byte: at most `per_ip` are kept, an admin gets in
  // meanwhile, and all are closed after handshake_timeout.
  void ExpectIdleFloodCapped(int n, int per_ip) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      const int fd = ConnectLoopback(port_);
      if (fd >= 0) fds.push_back(fd);
    }
    ASSERT_EQ(static_cast<int>(fds.size()), n);
    EXPECT_TRUE(WaitUntil([&] { return CountOpen(fds) <= per_ip; }, 20))
        << CountOpen(fds) << " of the flood still open\n"
        << Log();
    EXPECT_TRUE(List(NewChannel("admin"), "admin").ok()) << "an admin gets in during the flood\n"
                                                         << Log();
    EXPECT_GT(CountOpen(fds), 0) << "the flood was still there when the admin called";
    EXPECT_TRUE(WaitUntil([&] { return CountOpen(fds) == 0; }, 40))
        << CountOpen(fds) << " still open past handshake_timeout\n"
        << Log();
    for (int fd : fds) close(fd);
    EXPECT_THAT(
        Log(), HasSubstr("max_unauthenticated_connections_per_ip " + std::to_string(per_ip) + ")"));
    EXPECT_THAT(Log(), HasSubstr("made no authorized call within handshake_timeout"));
    EXPECT_TRUE(List(NewChannel("alice"), "alice").ok()) << Log();
  }

  std::string dir_;
  std::string host_ = "127.0.0.1";
  int port_ = 0, metrics_port_ = 0;
  bool tls_ = false;
  Process controller_;
};

TEST_F(TcpConnectionCaps, TokenCallersAreCappedPerIdentityAndInTotal) {
  StartController("max_connections_per_caller: 3\nmax_connections: 4\n", false);
  ExpectCallerCaps(3, 4);
}

TEST_F(TcpConnectionCaps, TokenPortIdleConnectionsAreCappedPerIpAndClosed) {
  StartController("max_unauthenticated_connections_per_ip: 8\nhandshake_timeout: 8s\n", false);
  ExpectIdleFloodCapped(50, 8);
}

TEST_F(TcpConnectionCaps, TlsCallersAreCappedAndSilentHandshakesClosed) {
  StartController(
      "max_connections_per_caller: 2\nmax_connections: 3\n"
      "max_unauthenticated_connections_per_ip: 8\nhandshake_timeout: 8s\n",
      true);
  ExpectCallerCaps(2, 3);
  ExpectIdleFloodCapped(30, 8);
}

// gRPC names an IPv6 peer "ipv6:%5B::1%5D:PORT": its connections are found and capped too.
TEST_F(TcpConnectionCaps, Ipv6CallersAreCapped) {
  const int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool v6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (probe >= 0) close(probe);
  if (!v6) GTEST_SKIP() << "no IPv6 loopback here";
  host_ = "[::1]";
  StartController("max_connections_per_caller: 1\n", false);
  auto first = NewChannel("alice");
  ASSERT_TRUE(List(first, "alice").ok()) << Log();
  const grpc::Status over = List(NewChannel("alice"), "alice");
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();
  EXPECT_THAT(over.error_message(), HasSubstr("(max_connections_per_caller 1)"));
  EXPECT_TRUE(List(NewChannel("admin"), "admin").ok()) << Log();
}

// gRPC's peer strings for connections the TcpListener handed over, as the registry keys them.
TEST(EndpointKey, PeerStringsOfGrpcMatchAcceptedAddresses) {
  sockaddr_storage v4{};
  auto& a = reinterpret_cast<sockaddr_in&>(v4);
  a.sin_family = AF_INET;
  a.sin_port = htons(51234);
  inet_pton(AF_INET, "10.0.0.7", &a.sin_addr);
  EXPECT_EQ(rpc::EndpointKey(v4), "10.0.0.7|51234");
  EXPECT_EQ(rpc::EndpointKeyOfPeer("ipv4:10.0.0.7:51234"), "10.0.0.7|51234");
  sockaddr_storage mapped{};
  auto& m = reinterpret_cast<sockaddr_in6&>(mapped);
  m.sin6_family = AF_INET6;
  m.sin6_port = htons(51234);
  inet_pton(AF_INET6, "::ffff:10.0.0.7", &m.sin6_addr);
  EXPECT_EQ(rpc::EndpointKey(mapped), "10.0.0.7|51234");
  sockaddr_storage v6{};
  auto& b = reinterpret_cast<sockaddr_in6&>(v6);
  b.sin6_family = AF_INET6;
  b.sin6_port = htons(40000);
  inet_pton(AF_INET6, "::1", &b.sin6_addr);
  EXPECT_EQ(rpc::EndpointKey(v6), "::1|40000");
  EXPECT_EQ(rpc::EndpointKeyOfPeer("ipv6:%5B::1%5D:40000"), "::1|40000");
  EXPECT_EQ(rpc::EndpointKeyOfPeer("ipv6:[::1]:40000"), "::1|40000");
  EXPECT_EQ(rpc::EndpointKeyOfPeer("fd:12"), "");
  EXPECT_EQ(rpc::EndpointKeyOfPeer("ipv4:10.0.0.7"), "");
  EXPECT_EQ(rpc::EndpointKeyOfPeer("ipv4:nohost:1"), "");
}

}  // namespace
}  // namespace codl
