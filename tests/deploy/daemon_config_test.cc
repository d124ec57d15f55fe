// codl-controller and codl-agent as processes: --config files with flags overriding them,
// config errors naming FILE:LINE:COL, and the systemd notify protocol (READY=1 only once the
// daemon serves, WATCHDOG=1 pings, STOPPING=1 on SIGTERM) against a fake $NOTIFY_SOCKET.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

using ::testing::HasSubstr;

// GET http://127.0.0.1:port/path over a plain socket; "" when nothing answers.
std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[8192];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, n);
    }
  }
  close(fd);
  return out;
}

class DaemonConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("codl-daemon-config");
    address_ = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  }
  void TearDown() override { RemoveTree(dir_); }

  std::string AgentsJson() {
    auto r = RunCommand({Bin("codlctl"), "--controller", address_, "agents", "--json"}, 10);
    return r.exit_code == 0 ? r.out : "";
  }

  std::string dir_, address_;
};

TEST_F(DaemonConfigTest, FileValuesThenFlagsOverride) {
  // Relative paths in a config file are relative to the file: the database lands in dir_.
  const int metrics_port = FreeLoopbackPort();
  WriteFile(
      dir_ + "/controller.yaml",
      "listen: " + address_ + "\ndatabase: results.db\nheartbeat_interval: 200ms\nlease: 5s\n");
  WriteFile(dir_ + "/agent.yaml", "controller: " + address_ +
                                      "\nlisten: 127.0.0.1:0\nid: from-file\n"
                                      "labels: {source: file, over: file}\nscratch_roots: [" +
                                      dir_ +
                                      "]\n"
                                      "state_dir: state\nmax_level: 0.5\n"
                                      "metrics_listen: 127.0.0.1:" +
                                      std::to_string(metrics_port) + "\n");
  Process controller({Bin("codl-controller"), "--config", dir_ + "/controller.yaml", "--insecure"},
                     dir_ + "/controller.log");
  Process agent({Bin("codl-agent"), "--config", dir_ + "/agent.yaml", "--id", "from-flag",
                 "--label", "over=flag", "--insecure"},
                dir_ + "/agent.log");
  std::string json;
  ASSERT_TRUE(
      WaitUntil([&] { return (json = AgentsJson()).find("from-flag") != std::string::npos; }, 20))
      << ReadFile(dir_ + "/controller.log") << ReadFile(dir_ + "/agent.log");
  EXPECT_THAT(json, HasSubstr("\"source\":\"file\""));
  EXPECT_THAT(json, HasSubstr("\"over\":\"flag\""));
  EXPECT_EQ(json.find("from-file"), std::string::npos) << "--id must override the file's id";
  EXPECT_EQ(access((dir_ + "/results.db").c_str(), F_OK), 0) << "database: relative to the file";
  EXPECT_EQ(access((dir_ + "/state").c_str(), F_OK), 0) << "state_dir: relative to the file";
  EXPECT_THAT(HttpGet(metrics_port, "/metrics"), HasSubstr("200 OK"))
      << "agent metrics_listen from the file";
  agent.Signal(SIGTERM);
  EXPECT_EQ(agent.Wait(10), 0);
  controller.Signal(SIGTERM);
  EXPECT_EQ(controller.Wait(10), 0);
}

TEST_F(DaemonConfigTest, BadFilesAreRejectedWithPosition) {
  WriteFile(dir_ + "/agent.yaml", "controller: 127.0.0.1:7700\nscratch_root: [/tmp]\n");
  auto r = RunCommand({Bin("codl-agent"), "--config", dir_ + "/agent.yaml"}, 10);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/agent.yaml:2:1: unknown top-level key 'scratch_root'"));

  WriteFile(dir_ + "/controller.yaml", "listen: 127.0.0.1:7700\nlease: forever\n");
  r = RunCommand({Bin("codl-controller"), "--config", dir_ + "/controller.yaml"}, 10);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/controller.yaml:2:8: lease: 'forever' is not a duration"));

  r = RunCommand({Bin("codl-controller"), "--config", dir_ + "/missing.yaml"}, 10);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--config " + dir_ + "/missing.yaml: No such file or directory"));

  r = RunCommand({Bin("codl-agent"), "--lease", "0s", "--controller", address_}, 10);
  EXPECT_EQ(r.exit_code, 2) << "flags are validated too";
}

TEST_F(DaemonConfigTest, TokensFileFromConfig) {
  // sha256("s3cret"): the file holds hashes only.
  WriteSecretFile(dir_ + "/tokens",
                  "# role id sha256\nuser-read alice "
                  "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0\n");
  WriteFile(
      dir_ + "/controller.yaml",
      "listen: " + address_ + "\ndatabase: c.db\ntokens_file: tokens\nheartbeat_interval: 200ms\n");
  Process controller({Bin("codl-controller"), "--config", dir_ + "/controller.yaml", "--insecure"},
                     dir_ + "/controller.log", "", {{"CODL_TOKEN", ""}});
  auto ctl = [&](const std::string& token) {
    WriteFile(dir_ + "/token", token + "\n");
    return RunCommand(
        {Bin("codlctl"), "--controller", address_, "--token-file", dir_ + "/token", "agents"}, 10);
  };
  ASSERT_TRUE(WaitUntil([&] { return ctl("s3cret").exit_code == 0; }, 20))
      << ReadFile(dir_ + "/controller.log");
  EXPECT_NE(ctl("wrong").exit_code, 0);
  // A token on the command line is refused outright (ps shows it to every local user).
  auto argv_token =
      RunCommand({Bin("codlctl"), "--controller", address_, "--token", "s3cret", "agents"}, 10);
  EXPECT_EQ(argv_token.exit_code, 2);
  EXPECT_NE(argv_token.err.find("--token-file"), std::string::npos) << argv_token.err;
}

// Secrets must be private: a token, tokens or TLS key file that others can read or change, or
// that another non-root user owns, stops both daemons before anything listens.
TEST_F(DaemonConfigTest, DaemonsRefuseSecretsOthersCanReadOrChange) {
  const std::string hash = "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0";
  WriteSecretFile(dir_ + "/tokens", "user-read alice " + hash + "\n");
  WriteSecretFile(dir_ + "/token", "s3cret\n");
  auto controller = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {Bin("codl-controller"), "--listen", address_,
                                     "--insecure",           "--db",     dir_ + "/c.db"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, 10);
  };
  auto agent = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {Bin("codl-agent"), "--controller", address_, "--insecure"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, 10);
  };
  chmod((dir_ + "/tokens").c_str(), 0666);
  auto r = controller({"--tokens-file", dir_ + "/tokens"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("tokens_file " + dir_ + "/tokens has mode 0666"));
  EXPECT_THAT(r.err, HasSubstr("chmod 600 " + dir_ + "/tokens"));

  chmod((dir_ + "/token").c_str(), 0644);
  r = agent({"--token-file", dir_ + "/token"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("token_file " + dir_ + "/token has mode 0644: other users can read"));

  chmod((dir_ + "/token").c_str(), 0620);  // group-writable
  r = controller({"--token-file", dir_ + "/token"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("has mode 0620: others can change it"));

  WriteFile(dir_ + "/key.pem", "not a key\n");  // 0644 by the umask
  chmod((dir_ + "/key.pem").c_str(), 0640);
  r = agent({"--tls-ca", dir_ + "/key.pem", "--tls-cert", dir_ + "/key.pem", "--tls-key",
             dir_ + "/key.pem"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("TLS key " + dir_ + "/key.pem has mode 0640"));

  if (geteuid() == 0) {  // root can hand the file to another user
    chmod((dir_ + "/tokens").c_str(), 0600);
    ASSERT_EQ(chown((dir_ + "/tokens").c_str(), 65534, 65534), 0);
    r = controller({"--tokens-file", dir_ + "/tokens"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("is owned by uid 65534, neither root nor this daemon's user"));
  }
}

#ifdef CODL_HAVE_SYSTEMD
// A datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{0, 50 * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() { close(fd_); }
  // Waits up to timeout_s for a message containing `needle`; counts those containing `count`.
  bool WaitFor(const std::string& needle, double timeout_s, const std::string& count = "",
               int* counted = nullptr) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string m(buf, n);
      if (counted && !count.empty() && m.find(count) != std::string::npos) ++*counted;
      if (m.find(needle) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST_F(DaemonConfigTest, NotifiesReadyWatchdogAndStopping) {
  for (const std::string daemon : {"codl-controller", "codl-agent"}) {
    SCOPED_TRACE(daemon);
    std::string sock_path = dir_ + "/notify-" + daemon;
    NotifySocket sock(sock_path);
    std::map<std::string, std::string> env{{"NOTIFY_SOCKET", sock_path},
                                           {"WATCHDOG_USEC", "400000"}};
    std::vector<std::string> argv =
        daemon == "codl-controller"
            ? std::vector<std::string>{Bin(daemon), "--listen",     address_,
                                       "--db",      dir_ + "/n.db", "--insecure"}
            : std::vector<std::string>{Bin(daemon),   "--controller",   address_, "--listen",
                                       "127.0.0.1:0", "--scratch-root", dir_,     "--insecure"};
    Process p(argv, dir_ + "/" + daemon + ".log", "", env);
    ASSERT_TRUE(sock.WaitFor("READY=1", 20)) << ReadFile(dir_ + "/" + daemon + ".log");
    if (daemon == "codl-controller") {
      // READY=1 is sent after Start(): the service answers at once.
      EXPECT_EQ(RunCommand({Bin("codlctl"), "--controller", address_, "agents"}, 5).exit_code, 0);
    }
    int pings = 0;
    sock.WaitFor("never", 1.0, "WATCHDOG=1", &pings);
    EXPECT_GE(pings, 3) << "WatchdogSec=400ms: a ping every 200 ms";
    p.Signal(SIGTERM);
    EXPECT_TRUE(sock.WaitFor("STOPPING=1", 10));
    EXPECT_EQ(p.Wait(10), 0);
  }
}
#else
TEST_F(DaemonConfigTest, NotifiesReadyWatchdogAndStopping) {
  GTEST_SKIP() << "built without libsystemd (libsystemd-dev): sd_notify support is compiled out";
}
#endif

}  // namespace
}  // namespace codl::testing
