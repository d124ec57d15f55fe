// codl_config: the daemons' config files (keys, types, ranges, FILE:LINE:COL errors), the
// shipped examples in deploy/config/, --config resolution, token files, and the sd_notify
// protocol against a fake $NOTIFY_SOCKET.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "lib/daemon/cli_flags.h"
#include "lib/daemon/daemon_config.h"
#include "lib/daemon/service_notifier.h"
#include "lib/daemon/victim_user.h"

namespace codl::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string SourceDir() {
  if (const char* d = getenv("CODL_SOURCE_DIR")) return d;
#ifdef CODL_TEST_SOURCE_DIR
  return CODL_TEST_SOURCE_DIR;  // compiled in (codl_test_source_dir)
#else
  return ".";
#endif
}

std::string TempDir() {
  char tmpl[] = "/tmp/codl-config-test-XXXXXX";
  return mkdtemp(tmpl);
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(AgentConfig, ShippedExampleParses) {
  auto c = LoadAgentConfig(SourceDir() + "/deploy/config/agent.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->controller.has_value());
  EXPECT_TRUE(c->scratch_roots.has_value());
  EXPECT_TRUE(c->lease_s.has_value());
  EXPECT_EQ(c->victim_user.value_or(""), "nobody");
}

TEST(AgentConfig, SecurityKeys) {
  auto c = ParseAgentConfig("victim_user: root\ntokens_file: tokens\ntoken_file: /t\n",
                            "/etc/codl/agent.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->victim_user, "root");
  EXPECT_EQ(*c->tokens_file, "/etc/codl/tokens");  // relative to the file
  EXPECT_FALSE(ParseAgentConfig("victim_user: \"\"\n", "a.yaml").ok());
}

TEST(AgentConfig, VictimIsolationKeys) {
  auto c = ParseAgentConfig(
      "victim_uid_range: 61000-61999\nvictim_env: clean\nvictim_env_keep: [CUDA_VISIBLE_DEVICES]\n"
      "victim_uid_lock_dir: /var/lib/codl/agent/victim-uids\n",
      "a.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->victim_uid_range, "61000-61999");
  EXPECT_EQ(*c->victim_env, "clean");
  EXPECT_EQ(c->victim_env_keep->front(), "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(*c->victim_uid_lock_dir, "/var/lib/codl/agent/victim-uids");
  auto error = [](const std::string& text) {
    auto r = ParseAgentConfig(text, "a.yaml");
    return r.ok() ? std::string("parsed") : r.error();
  };
  EXPECT_EQ(error("victim_uid_range: 61999-61000\n"),
            "a.yaml:1:19: victim_uid_range: '61999-61000': needs 1 <= LO <= HI < 2147483647");
  EXPECT_EQ(error("victim_uid_range: 1-70000\n"),
            "a.yaml:1:19: victim_uid_range: '1-70000': 70000 uids, at most 65536");
  EXPECT_EQ(error("victim_uid_range: lots\n"),
            "a.yaml:1:19: victim_uid_range: 'lots': expected LO-HI, e.g. 61000-61999");
  EXPECT_NE(error("victim_user: nobody\nvictim_uid_range: 61000-61001\n").find("exclusive"),
            std::string::npos);
  EXPECT_EQ(error("victim_env: dirty\n"),
            "a.yaml:1:13: victim_env: 'dirty': expected clean or inherit");
  EXPECT_EQ(error("victim_env_keep: [\"A=B\"]\n"),
            "a.yaml:1:18: victim_env_keep: 'A=B': not a variable name");
}

TEST(VictimUser, AUidRangeMustBeNoUsersAndNotTheAgents) {
  EXPECT_TRUE(CheckUidRangeIsFree({61000, 61010}, 0).ok());
  auto root = CheckUidRangeIsFree({0, 3}, 0);
  EXPECT_FALSE(root.ok());
  auto nobody = CheckUidRangeIsFree({65530, 65534}, 0);  // Debian's nobody is 65534
  ASSERT_FALSE(nobody.ok());
  EXPECT_NE(nobody.error().find("belongs to user 'nobody'"), std::string::npos) << nobody.error();
}

TEST(VictimUser, RootAgentsRunVictimsUnprivilegedUnlessToldOtherwise) {
  // A non-root agent runs victims as itself, whatever is configured.
  EXPECT_FALSE(ResolveVictimUser("", 1000)->has_value());
  EXPECT_FALSE(ResolveVictimUser("nobody", 1000)->has_value());
  // A root agent: nobody by default, root only when configured.
  auto by_default = ResolveVictimUser("", 0);
  ASSERT_TRUE(by_default.ok()) << by_default.error();
  ASSERT_TRUE(by_default->has_value());
  EXPECT_NE((*by_default)->uid, 0u);
  EXPECT_EQ((*by_default)->user, "nobody");
  EXPECT_FALSE(ResolveVictimUser("root", 0)->has_value());
  EXPECT_FALSE(ResolveVictimUser("no-such-user-codl", 0).ok());
}

TEST(ControllerConfig, ShippedExampleParses) {
  auto c = LoadControllerConfig(SourceDir() + "/deploy/config/controller.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->listen.has_value());
  EXPECT_TRUE(c->database.has_value());
}

// The Kubernetes ConfigMaps embed the daemons' config files: they must parse too.
TEST(ConfigFiles, KubernetesConfigMapsParse) {
  const std::string path = SourceDir() + "/deploy/k8s/config.yaml";
  int seen = 0;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(path)) {
    if (!doc["data"]) continue;
    for (const auto& kv : doc["data"]) {
      const std::string name = kv.first.as<std::string>();
      const std::string where = path + " (" + name + ")";
      if (name == "agent.yaml") {
        auto c = ParseAgentConfig(kv.second.as<std::string>(), where);
        EXPECT_TRUE(c.ok()) << c.error();
        ++seen;
      } else if (name == "controller.yaml") {
        auto c = ParseControllerConfig(kv.second.as<std::string>(), where);
        EXPECT_TRUE(c.ok()) << c.error();
        ++seen;
      }
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(AgentConfig, EveryKey) {
  auto c = ParseAgentConfig(R"(
controller: ctl.example:7700
listen: 0.0.0.0:7701
advertise: "[fd00::1]:7701"
id: gpu-07
labels: {role: gpu, rack: 12}
scratch_roots: [/scratch/codl, /nvme/codl]
allow_victim: false
max_level: 0.8
lease: 15s
heartbeat_interval: 500ms
state_dir: state
tls: {ca: /etc/codl/ca.pem, cert: certs/agent.pem, key: /etc/codl/agent.key}
token_file: /etc/codl/token
metrics_listen: 0.0.0.0:9465
)",
                            "/etc/codl/agent.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->controller, "ctl.example:7700");
  EXPECT_EQ(*c->listen, "0.0.0.0:7701");
  EXPECT_EQ(*c->advertise, "[fd00::1]:7701");
  EXPECT_EQ(*c->id, "gpu-07");
  EXPECT_EQ(c->labels.at("role"), "gpu");
  EXPECT_EQ(c->labels.at("rack"), "12");
  EXPECT_EQ(c->scratch_roots->size(), 2u);
  EXPECT_FALSE(*c->allow_victim);
  EXPECT_DOUBLE_EQ(*c->max_level, 0.8);
  EXPECT_DOUBLE_EQ(*c->lease_s, 15);
  EXPECT_DOUBLE_EQ(*c->heartbeat_interval_s, 0.5);
  EXPECT_EQ(*c->state_dir, "/etc/codl/state");  // relative to the file's directory
  EXPECT_EQ(c->tls->cert, "/etc/codl/certs/agent.pem");
  EXPECT_EQ(c->tls->ca, "/etc/codl/ca.pem");
  EXPECT_EQ(*c->token_file, "/etc/codl/token");
  EXPECT_EQ(*c->metrics_listen, "0.0.0.0:9465");
}

TEST(AgentConfig, EmptyAndCommentOnlyFilesSetNothing) {
  for (const char* text : {"", "# nothing here\n", "---\n"}) {
    auto c = ParseAgentConfig(text, "a.yaml");
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_FALSE(c->controller.has_value());
    EXPECT_TRUE(c->labels.empty());
  }
}

struct BadCase {
  const char* text;
  const char* error;  // the whole "FILE:LINE:COL: message" prefix we expect
};

class AgentConfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(AgentConfigErrors, NameFileLineColumn) {
  auto c = ParseAgentConfig(GetParam().text, "agent.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error(), StartsWith(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    All, AgentConfigErrors,
    ::testing::Values(
        BadCase{"controller: h:7700\ncontroler: x:1\n",
                "agent.yaml:2:1: unknown top-level key 'controler'"},
        BadCase{"max_level: 1.5\n", "agent.yaml:1:12: max_level: must be in (0, 1]"},
        BadCase{"max_level: 0\n", "agent.yaml:1:12: max_level: must be in (0, 1]"},
        BadCase{"max_level: \"0.5\"\n",
                "agent.yaml:1:12: max_level: expected a number, got the string"},
        BadCase{"max_level: high\n", "agent.yaml:1:12: max_level: expected a number"},
        BadCase{"allow_victim: maybe\n", "agent.yaml:1:15: allow_victim: expected true or false"},
        BadCase{"lease: 10 parsecs\n", "agent.yaml:1:8: lease: '10 parsecs'"},
        BadCase{"lease: 0s\n", "agent.yaml:1:8: lease: '0s' must be greater than 0"},
        BadCase{"allow_victim: \"true\"\n",
                "agent.yaml:1:15: allow_victim: expected true or false, got the string \"true\""},
        BadCase{"id: a\n---\nid: b\n", "agent.yaml:3:1: expected one YAML document, found 2"},
        BadCase{"lease: 2s\nheartbeat_interval: 5s\n",
                "agent.yaml:2:21: heartbeat_interval: must be shorter than lease"},
        BadCase{"controller: localhost\n", "agent.yaml:1:13: controller: 'localhost' has no port"},
        BadCase{"controller: h:99999\n", "agent.yaml:1:13: controller: 'h:99999': port must be"},
        BadCase{"controller: h:0\n",
                "agent.yaml:1:13: controller: 'h:0': port must be an integer in [1,"},
        BadCase{"listen: [a, b]\n", "agent.yaml:1:9: listen: expected a string, got a list"},
        BadCase{"labels: [a]\n",
                "agent.yaml:1:9: labels: expected a mapping of labels, got a list"},
        BadCase{"labels: {\"bad key\": x}\n", "agent.yaml:1:10: labels: label name 'bad key'"},
        BadCase{"labels:\n  role: {a: b}\n", "agent.yaml:2:9: labels.role: expected a string"},
        BadCase{"scratch_roots: /scratch\n",
                "agent.yaml:1:16: scratch_roots: expected a list of paths"},
        BadCase{"scratch_roots: [/ok, rel/dir]\n",
                "agent.yaml:1:22: scratch_roots[1]: 'rel/dir' must be an absolute path"},
        BadCase{"scratch_roots: []\n", "agent.yaml:1:16: scratch_roots: must name at least one"},
        BadCase{"tls: {ca: a, cert: b}\n", "agent.yaml:1:6: tls: missing 'key'"},
        BadCase{"tls:\n  ca: a\n  cert: b\n  key: c\n  pass: d\n",
                "agent.yaml:5:3: tls: unknown key 'pass'"},
        BadCase{"id: a\nid: b\n", "agent.yaml:2:1: duplicate key 'id'"},
        BadCase{"id: \"\"\n", "agent.yaml:1:5: id: must not be empty"},
        BadCase{"- controller: h:1\n", "agent.yaml:1:1: expected a mapping, got a list"},
        BadCase{"controller: [h:1\n", "agent.yaml:"}),  // YAML syntax error, with a position
    // Stable test names (the default would print the struct's bytes, pointers included).
    [](const ::testing::TestParamInfo<BadCase>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(ControllerConfig, EveryKeyAndErrors) {
  auto c = ParseControllerConfig(
      "listen: 0.0.0.0:7700\ndatabase: /var/lib/codl/controller.db\nlease: 10s\n"
      "heartbeat_interval: 1s\ntoken_file: token\nmetrics_listen: 0.0.0.0:9464\n",
      "/etc/codl/controller.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->database, "/var/lib/codl/controller.db");
  EXPECT_EQ(*c->token_file, "/etc/codl/token");
  EXPECT_EQ(*c->metrics_listen, "0.0.0.0:9464");
  EXPECT_FALSE(c->agent_rejoin_grace_s.has_value());
  c = ParseControllerConfig("agent_rejoin_grace: 2m\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->agent_rejoin_grace_s, 120);

  auto bad = ParseControllerConfig("listen: 127.0.0.1:7700\nscratch_roots: [/x]\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(),
              StartsWith("c.yaml:2:1: unknown top-level key 'scratch_roots' (expected one of:"));
  bad = ParseControllerConfig("heartbeat_interval: soon\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), StartsWith("c.yaml:1:21: heartbeat_interval: 'soon' is not a duration"));
}

TEST(DaemonConfig, LoggingAndHealthKeys) {
  auto c = ParseAgentConfig("log_level: debug\nlog_format: json\nhealth_listen: 0.0.0.0:7711\n",
                            "a.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->log_level, "debug");
  EXPECT_EQ(*c->log_format, "json");
  EXPECT_EQ(*c->health_listen, "0.0.0.0:7711");
  auto bad = ParseControllerConfig("log_level: loud\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), StartsWith("c.yaml:1:12: log_level: expected debug, info, warn or"));
  bad = ParseControllerConfig("log_format: xml\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), StartsWith("c.yaml:1:13: log_format: expected text or json"));
}

// Connection caps (docs/configuration.md): both daemons take them; a bad value names the key
// and its range.
TEST(DaemonConfig, ConnectionCapKeys) {
  const char* text =
      "max_connections: 500\nmax_connections_per_caller: 8\nmax_unauthenticated_connections: "
      "100\nmax_unauthenticated_connections_per_ip: 16\nhandshake_timeout: 5s\n"
      "idle_timeout: 2m\n";
  auto a = ParseAgentConfig(text, "a.yaml");
  ASSERT_TRUE(a.ok()) << a.error();
  auto c = ParseControllerConfig(text, "c.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  for (const ConnectionConfig* k : {&a->connections, &c->connections}) {
    EXPECT_EQ(*k->max_connections, 500);
    EXPECT_EQ(*k->max_connections_per_caller, 8);
    EXPECT_EQ(*k->max_unauthenticated_connections, 100);
    EXPECT_EQ(*k->max_unauthenticated_connections_per_ip, 16);
    EXPECT_DOUBLE_EQ(*k->handshake_timeout_s, 5);
    EXPECT_DOUBLE_EQ(*k->idle_timeout_s, 120);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"max_unauthenticated_connections_per_ip: 0\n",
       "c.yaml:1:41: max_unauthenticated_connections_per_ip: 0 is out of range [1, 1048576]"},
      {"max_unauthenticated_connections: many\n",
       "c.yaml:1:34: max_unauthenticated_connections: expected an integer"},
      {"handshake_timeout: 0s\n", "c.yaml:1:20: handshake_timeout: '0s' must be greater than 0"},
      {"handshake_timeout: 2h\n", "c.yaml:1:20: handshake_timeout: must be in [1s, 1h]"},
      {"max_connections: -3\n", "c.yaml:1:18: max_connections: -3 is out of range [1, 1048576]"},
  };
  for (const auto& [text, error] : bad) {
    auto r = ParseControllerConfig(text, "c.yaml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.error(), StartsWith(error));
  }
}

TEST(ConfigPath, ExplicitMustExistDefaultMayBeMissing) {
  std::string dir = TempDir();
  auto missing_default = ResolveConfigPath("", false, dir + "/nope.yaml");
  ASSERT_TRUE(missing_default.ok());
  EXPECT_EQ(*missing_default, "");
  auto missing_explicit = ResolveConfigPath(dir + "/nope.yaml", true, "/etc/codl/agent.yaml");
  ASSERT_FALSE(missing_explicit.ok());
  EXPECT_THAT(missing_explicit.error(), HasSubstr("No such file"));
  Write(dir + "/a.yaml", "id: x\n");
  auto present_default = ResolveConfigPath("", false, dir + "/a.yaml");
  ASSERT_TRUE(present_default.ok());
  EXPECT_EQ(*present_default, dir + "/a.yaml");
  auto empty = LoadAgentConfig("");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->id.has_value());
  auto loaded = LoadAgentConfig(dir + "/a.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(*loaded->id, "x");
  std::system(("rm -rf " + dir).c_str());
}

TEST(Token, FileIsTrimmedAndNeverFromTheEnvironment) {
  std::string dir = TempDir();
  Write(dir + "/token", "  s3cret\n");
  Write(dir + "/other", "flagged\n");
  Write(dir + "/blank", "\n \n");
  EXPECT_EQ(*ReadTokenFile(dir + "/token"), "s3cret");
  EXPECT_FALSE(ReadTokenFile(dir + "/blank").ok());
  EXPECT_FALSE(ReadTokenFile(dir + "/absent").ok());
  EXPECT_EQ(*ResolveToken(dir + "/other", dir + "/token"), "flagged");  // the flag beats the file
  EXPECT_EQ(*ResolveToken("", dir + "/token"), "s3cret");
  setenv("CODL_TOKEN", "env", 1);  // daemons do not read it (children could see it)
  EXPECT_EQ(*ResolveToken("", dir + "/token"), "s3cret");
  EXPECT_EQ(*ResolveToken("", std::nullopt), "");
  unsetenv("CODL_TOKEN");
  std::system(("rm -rf " + dir).c_str());
}

TEST(Flags, LabelsMergeOverFileAndDurationsParse) {
  auto l = MergeLabels({{"role", "gpu"}, {"rack", "1"}}, {"rack=2", "zone=a"});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->at("role"), "gpu");
  EXPECT_EQ(l->at("rack"), "2");
  EXPECT_EQ(l->at("zone"), "a");
  EXPECT_FALSE(MergeLabels({}, {"novalue"}).ok());

  CLI::App app;
  double lease = 10;
  app.add_option("--lease", lease)->transform(DurationFlag());
  app.parse("--lease 250ms", false);
  EXPECT_DOUBLE_EQ(lease, 0.25);
  CLI::App bad;
  bad.add_option("--lease", lease)->transform(DurationFlag());
  EXPECT_THROW(bad.parse("--lease 0s", false), CLI::ValidationError);
}

// A fake service manager: a datagram socket at $NOTIFY_SOCKET collecting what sd_notify sends.
class FakeNotifySocket {
 public:
  FakeNotifySocket() {
    dir_ = TempDir();
    path_ = dir_ + "/notify";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{0, 100 * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~FakeNotifySocket() {
    unsetenv("NOTIFY_SOCKET");
    close(fd_);
    std::system(("rm -rf " + dir_).c_str());
  }
  // Messages received within `seconds`.
  std::vector<std::string> Drain(double seconds) {
    std::vector<std::string> got;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n > 0) got.emplace_back(buf, n);
    }
    return got;
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

int Count(const std::vector<std::string>& msgs, const std::string& needle) {
  int n = 0;
  for (const auto& m : msgs) n += m.find(needle) != std::string::npos;
  return n;
}

TEST(ServiceNotifier, ReadyWatchdogStopping) {
  if (!ServiceNotifier::Supported())
    GTEST_SKIP() << "built without libsystemd: notifier is a no-op";
  FakeNotifySocket sock;
  setenv("WATCHDOG_USEC", "200000", 1);  // 200 ms: pings every 100 ms
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  {
    ServiceNotifier n;
    EXPECT_DOUBLE_EQ(n.watchdog_interval_s(), 0.1);
    n.Ready("serving");
    auto msgs = sock.Drain(0.55);
    ASSERT_FALSE(msgs.empty());
    EXPECT_THAT(msgs[0], HasSubstr("READY=1"));
    EXPECT_THAT(msgs[0], HasSubstr("STATUS=serving"));
    EXPECT_GE(Count(msgs, "WATCHDOG=1"), 3);
    n.Stopping();
    msgs = sock.Drain(0.3);
    EXPECT_EQ(Count(msgs, "STOPPING=1"), 1);
    // A ping sent before Stopping() may still sit in the socket after the first Drain: count only
    // what follows STOPPING=1.
    auto stopping = std::find_if(msgs.begin(), msgs.end(), [](const std::string& m) {
      return m.find("STOPPING=1") != std::string::npos;
    });
    ASSERT_NE(stopping, msgs.end());
    EXPECT_EQ(Count(std::vector<std::string>(stopping, msgs.end()), "WATCHDOG=1"), 0)
        << "no pings after STOPPING=1";
  }
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
}

TEST(ServiceNotifier, UnhealthySkipsPingsAndNoWatchdogMeansNoThread) {
  if (!ServiceNotifier::Supported())
    GTEST_SKIP() << "built without libsystemd: notifier is a no-op";
  FakeNotifySocket sock;
  setenv("WATCHDOG_USEC", "100000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  {
    ServiceNotifier n([] { return false; });
    n.Ready("wedged");
    EXPECT_EQ(Count(sock.Drain(0.3), "WATCHDOG=1"), 0);
  }
  setenv("WATCHDOG_PID", "1", 1);  // the watchdog is meant for another process
  {
    ServiceNotifier n;
    EXPECT_EQ(n.watchdog_interval_s(), 0);
  }
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
}

TEST(ServiceNotifier, NoSocketIsANoOp) {
  unsetenv("NOTIFY_SOCKET");
  ServiceNotifier n;
  n.Ready("x");
  n.Stopping();
}

}  // namespace
}  // namespace codl::daemon
