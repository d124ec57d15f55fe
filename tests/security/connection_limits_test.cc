// Issue "Security, third pass", item 1: a caller granted only `user-read` on the unix socket
// opened thousands of idle connections and locked everyone out, root included, until the
// controller ran out of descriptors. Here a real codl-controller runs with a small descriptor
// limit (prlimit --nofile=256, set by the test) and small caps (max_connections_per_caller 8,
// idle_timeout 2s); a child running as nobody floods it with 300 connections that never send a
// byte. The controller keeps at most 8 of them, root's `codlctl agents` still works during the
// flood, and the idle timeout closes the 8 as well.
#include <gtest/gtest.h>

#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tests/integration/test_util.h"

namespace codl {
namespace {

using namespace codl::testing;

constexpr uid_t kNobody = 65534;

int ConnectUnix(const sockaddr_un& a) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// How many of `fds` the server has not closed: readable with 0 bytes (EOF) or an error means
// closed. Data (the server's HTTP/2 settings) means open.
int StillOpen(const int* fds, int n) {
  int open = 0;
  for (int i = 0; i < n; ++i) {
    const int fd = fds[i];
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) {
      ++open;
      continue;
    }
    char buf[256];
    ssize_t n;
    bool closed = false;
    while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
    open += !closed;
  }
  return open;
}

class ConnectionLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the flood runs as nobody";
    if (access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "prlimit (util-linux) not found";
    dir_ = MakeTempDir("codl-conn-limits");
    chmod(dir_.c_str(), 0711);
    socket_ = dir_ + "/run/controller.sock";
    WriteFile(dir_ + "/controller.yaml",
              "listen: unix:" + socket_ + "\ndatabase: c.db\nunix_roles: [user-read=uid:65534]\n" +
                  "max_connections_per_caller: 8\nmax_connections: 16\nidle_timeout: 2s\n");
    controller_ = Process({"/usr/bin/prlimit", "--nofile=256:256", Bin("codl-controller"),
                           "--config", dir_ + "/controller.yaml"},
                          dir_ + "/controller.log");
    ASSERT_TRUE(WaitUntil([&] { return RootCanList(); }, 20)) << ReadFile(dir_ + "/controller.log");
  }
  void TearDown() override {
    if (!dir_.empty()) RemoveTree(dir_);
  }
  bool RootCanList() {
    return RunCommand({Bin("codlctl"), "--controller", "unix:" + socket_, "agents"}, 10)
               .exit_code == 0;
  }
  std::string dir_, socket_;
  Process controller_;
};

TEST_F(ConnectionLimits, AReadOnlyCallerCannotExhaustTheDaemonAndIdleConnectionsAreClosed) {
  int to_parent[2], to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  // A plain fork: the child keeps the pipes, and makes only async-signal-safe calls (everything
  // it needs is allocated before).
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_.c_str());
  static int fds[300];
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(101);
    int n = 0;
    for (int i = 0; i < 300; ++i) {
      const int fd = ConnectUnix(addr);
      if (fd >= 0) fds[n++] = fd;
    }
    usleep(700 * 1000);  // the listener accepts and refuses asynchronously
    int counts[3] = {n, StillOpen(fds, n), 0};
    if (write(to_parent[1], counts, 2 * sizeof(int)) < 0) _exit(102);
    char go;
    if (read(to_child[0], &go, 1) != 1) _exit(103);  // the parent checked root's access
    usleep(3500 * 1000);                             // past idle_timeout 2s
    counts[2] = StillOpen(fds, n);
    if (write(to_parent[1], &counts[2], sizeof(int)) < 0) _exit(104);
    _exit(0);
  }
  close(to_parent[1]);
  close(to_child[0]);
  int counts[2] = {0, 0};
  ASSERT_EQ(read(to_parent[0], counts, sizeof counts), static_cast<ssize_t>(sizeof counts));
  EXPECT_GT(counts[0], 8) << "the flood connected";
  EXPECT_LE(counts[1], 8) << "at most max_connections_per_caller kept";
  EXPECT_TRUE(RootCanList()) << "root is not locked out during the flood\n"
                             << ReadFile(dir_ + "/controller.log");
  ASSERT_EQ(write(to_child[1], "g", 1), 1);
  int after = -1;
  ASSERT_EQ(read(to_parent[0], &after, sizeof after), static_cast<ssize_t>(sizeof after));
  EXPECT_EQ(after, 0) << "idle connections are closed after idle_timeout";
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string log = ReadFile(dir_ + "/controller.log");
  EXPECT_NE(log.find("refused a connection: uid 65534 already has 8 connections open "
                     "(max_connections_per_caller 8)"),
            std::string::npos)
      << log;
  close(to_parent[0]);
  close(to_child[1]);
}

}  // namespace
}  // namespace codl
