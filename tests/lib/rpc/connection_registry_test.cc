// The connection registry's rules without gRPC (connection_registry.h): socket pairs stand in
// for accepted TCP connections, with made-up peer addresses; the far end of each pair shows
// whether the registry shut a connection down.
#include "lib/rpc/connection_registry.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

namespace codl::rpc {
namespace {

using ::testing::HasSubstr;

sockaddr_storage PeerAddress(const char* ip, int port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return s;
}

// A socket pair: `ours` is registered as the accepted connection, `far` is the caller's end.
struct FakeConnection {
  int ours = -1, far = -1;
  FakeConnection() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
      ours = fds[0];
      far = fds[1];
    }
  }
  ~FakeConnection() { Close(); }
  void Close() {
    if (ours >= 0) close(ours);
    if (far >= 0) close(far);
    ours = far = -1;
  }
  // Whether the registry shut our end down: the far end reads end of stream.
  bool ShutDown() const {
    char c;
    return recv(far, &c, 1, MSG_DONTWAIT) == 0;
  }
};

class ConnectionRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = CurrentConnectionLimits(); }
  void TearDown() override { SetConnectionLimits(saved_); }
  ConnectionLimits saved_;
};

TEST_F(ConnectionRegistryTest, UnauthenticatedAreCappedPerIpOldestClosedFirst) {
  ConnectionLimits caps = saved_;
  caps.unauthenticated_per_ip = 2;
  caps.unauthenticated = 100;
  SetConnectionLimits(caps);
  FakeConnection a, b, c, other;
  EXPECT_FALSE(connections::AdmitTcp(a.ours, PeerAddress("10.1.0.1", 1001)));
  EXPECT_FALSE(connections::AdmitTcp(b.ours, PeerAddress("10.1.0.1", 1002)));
  auto evicted = connections::AdmitTcp(c.ours, PeerAddress("10.1.0.1", 1003));
  ASSERT_TRUE(evicted);
  EXPECT_THAT(*evicted, HasSubstr("2 connections from 10.1.0.1 have made no authorized call yet "
                                  "(max_unauthenticated_connections_per_ip 2)"));
  EXPECT_TRUE(a.ShutDown()) << "the oldest goes";
  EXPECT_FALSE(b.ShutDown());
  EXPECT_FALSE(c.ShutDown());
  EXPECT_FALSE(connections::AdmitTcp(other.ours, PeerAddress("10.1.0.2", 1001)))
      << "another address has its own share";
  EXPECT_EQ(OpenConnectionsByRole()[kUnauthenticatedLabel], 3);
  // An authorized call takes a connection out of the unauthenticated ones.
  EXPECT_TRUE(AttributeConnection("ipv4:10.1.0.1:1002", Identity{Role::kAdmin, "ops"}).ok());
  EXPECT_EQ(OpenConnectionsByRole()[kUnauthenticatedLabel], 2);
  EXPECT_EQ(OpenConnectionsByRole()["admin"], 1);
}

TEST_F(ConnectionRegistryTest, CallersAreCountedAtTheirFirstCallAdminsAreNot) {
  ConnectionLimits caps = saved_;
  caps.per_caller = 2;
  caps.total = 3;
  SetConnectionLimits(caps);
  std::vector<FakeConnection> c(7);
  for (int i = 0; i < 7; ++i) {
    ASSERT_FALSE(connections::AdmitTcp(c[i].ours, PeerAddress("10.2.0.1", 2000 + i)));
  }
  const Identity alice{Role::kUserRead, "alice"}, bob{Role::kUserRead, "bob"};
  EXPECT_TRUE(AttributeConnection("ipv4:10.2.0.1:2000", alice).ok());
  EXPECT_TRUE(AttributeConnection("ipv4:10.2.0.1:2000", alice).ok()) << "counted once";
  EXPECT_TRUE(AttributeConnection("ipv4:10.2.0.1:2001", alice).ok());
  Status over = AttributeConnection("ipv4:10.2.0.1:2002", alice);
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(over.error(), HasSubstr("user-read/alice already has 2 connections open "
                                      "(max_connections_per_caller 2)"));
  EXPECT_EQ(AttributeConnection("ipv4:10.2.0.1:2002", Identity{Role::kAdmin, "ops"}).code(),
            StatusCode::kResourceExhausted)
      << "a refused connection stays refused until it is shut down";
  EXPECT_TRUE(AttributeConnection("ipv4:10.2.0.1:2003", Identity{Role::kAdmin, "ops"}).ok());
  EXPECT_TRUE(AttributeConnection("ipv4:10.2.0.1:2004", bob).ok());
  Status full = AttributeConnection("ipv4:10.2.0.1:2005", bob);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(full.error(), HasSubstr("3 connections of non-admin callers are open "
                                      "(max_connections 3)"));
  auto roles = OpenConnectionsByRole();
  EXPECT_EQ(roles["user-read"], 3);
  EXPECT_EQ(roles["admin"], 1);
  // The caller closes one: its slot is free once the registry sees it gone.
  c[0].Close();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // past the prune rate limit
  EXPECT_TRUE(AttributeConnection("ipv4:10.2.0.1:2006", alice).ok());
  // Peers that are no tracked TCP connection are not ours to judge.
  EXPECT_TRUE(AttributeConnection("fd:3", alice).ok());
  EXPECT_TRUE(AttributeConnection("ipv4:10.9.9.9:1", alice).ok());
}

TEST_F(ConnectionRegistryTest, PoolAgentCertificatesAreCountedPerAddress) {
  ConnectionLimits caps = saved_;
  caps.per_caller = 1;
  SetConnectionLimits(caps);
  FakeConnection a, b, c;
  ASSERT_FALSE(connections::AdmitTcp(a.ours, PeerAddress("10.3.0.1", 1)));
  ASSERT_FALSE(connections::AdmitTcp(b.ours, PeerAddress("10.3.0.2", 1)));
  ASSERT_FALSE(connections::AdmitTcp(c.ours, PeerAddress("10.3.0.2", 2)));
  const Identity pool{Role::kAgent, kAnyAgent};
  EXPECT_TRUE(AttributeConnection("ipv4:10.3.0.1:1", pool).ok());
  EXPECT_TRUE(AttributeConnection("ipv4:10.3.0.2:1", pool).ok()) << "another node";
  Status s = AttributeConnection("ipv4:10.3.0.2:2", pool);
  EXPECT_THAT(s.error(), HasSubstr("agent/*@10.3.0.2 already has 1 connections open"));
}

TEST_F(ConnectionRegistryTest, SilentConnectionsAreClosedAfterTheHandshakeTimeout) {
  ConnectionLimits caps = saved_;
  caps.handshake_timeout_s = 0.05;
  SetConnectionLimits(caps);
  FakeConnection silent, talking;
  ASSERT_FALSE(connections::AdmitTcp(silent.ours, PeerAddress("10.4.0.1", 1)));
  ASSERT_FALSE(connections::AdmitTcp(talking.ours, PeerAddress("10.4.0.1", 2)));
  ASSERT_TRUE(AttributeConnection("ipv4:10.4.0.1:2", Identity{Role::kUserRead, "carol"}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(connections::CloseOverdue(), 1);
  EXPECT_TRUE(silent.ShutDown());
  EXPECT_FALSE(talking.ShutDown());
}

}  // namespace
}  // namespace codl::rpc
