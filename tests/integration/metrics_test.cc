// Prometheus metrics of the controller and an agent: served over HTTP, named by the Prometheus
// conventions (checked by `promtool check metrics`), and moving with what happened.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include <gtest/gtest.h>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

// GET http://127.0.0.1:port/metrics; "" on failure.
std::string HttpGetMetrics(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) resp.append(buf, n);
  close(fd);
  auto body = resp.find("\r\n\r\n");
  return body == std::string::npos ? "" : resp.substr(body + 4);
}

double Value(const std::string& text, const std::string& series) {
  std::regex re("^" + std::regex_replace(series, std::regex(R"([{}\[\]().*+?^$|\\])"), R"(\$&)") +
                    R"( ([0-9.eE+-]+)$)",
                std::regex::multiline);
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stod(m[1]) : -1;
}

TEST(Metrics, ControllerAndAgentExposePromtoolCleanMetrics) {
  if (!std::filesystem::exists("/usr/bin/promtool")) {
    GTEST_SKIP() << "promtool not installed (Debian package 'prometheus')";
  }
  std::string dir = MakeTempDir("codl-metrics");
  int port = FreeLoopbackPort(), cport = FreeLoopbackPort(), aport = FreeLoopbackPort();
  std::string address = "127.0.0.1:" + std::to_string(port);
  Process controller({Bin("codl-controller"), "--listen", address, "--db", dir + "/c.db",
                      "--metrics-listen", "127.0.0.1:" + std::to_string(cport), "--insecure"},
                     dir + "/controller.log");
  Process agent({Bin("codl-agent"), "--controller", address, "--id", "m1", "--listen",
                 "127.0.0.1:0", "--scratch-root", dir, "--metrics-listen",
                 "127.0.0.1:" + std::to_string(aport), "--insecure"},
                dir + "/agent.log");
  WriteFile(dir + "/exp.yaml",
            "name: metrics\n"
            "victim: {command: [sh, -c, 'sleep 0.01; echo {\\\"step_time_s\\\": 0.01}; sleep 0.02; "
            "echo {\\\"step_time_s\\\": 0.02}'],"
            " timeout: 30s}\n"
            "antagonists: [{name: idle, injector: noop, rates: ['1000']}]\n"
            "repetitions: 2\nsettle: 1s\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return RunCommand({Bin("codlctl"), "--controller", address, "agents", "--json"}, 5)
                   .out.find("\"alive\":true") != std::string::npos;
      },
      20))
      << ReadFile(dir + "/agent.log");
  auto run = RunCommand(
      {Bin("codlctl"), "--controller", address, "submit", dir + "/exp.yaml", "--watch"}, 120);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  std::string cm, am;
  // Gauges refresh once a second: when the (randomly ordered) last trial had an antagonist,
  // the running gauge reaches 0 up to a second after the experiment ends.
  ASSERT_TRUE(WaitUntil(
      [&] {
        cm = HttpGetMetrics(cport);
        am = HttpGetMetrics(aport);
        return Value(cm, "codl_agents{state=\"up\"}") == 1 &&
               Value(am, "codl_agent_victim_runs_total{result=\"ok\"}") >= 4 &&
               Value(am, "codl_agent_antagonists_running") == 0;
      },
      10))
      << cm << "\n----\n"
      << am;
  // 2 baselines + 2 noop trials; a noop trial may be flagged on a busy machine.
  double flagged = std::max(0.0, Value(cm, "codl_trials_total{state=\"flagged\"}"));
  EXPECT_EQ(Value(cm, "codl_trials_total{state=\"done\"}") + flagged, 4) << cm;
  EXPECT_EQ(Value(cm, "codl_experiments_finished_total{state=\"done\"}"), 1) << cm;
  EXPECT_EQ(Value(cm, "codl_victim_step_time_seconds_count{baseline=\"true\"}"), 4) << cm;
  EXPECT_EQ(Value(am, "codl_agent_antagonists_started_total"), 2) << am;
  EXPECT_EQ(Value(am, "codl_agent_antagonists_running"), 0) << am;
  // Units live in metric names, the experiment's series went away with it, builds are labelled.
  for (const std::string& text : {cm, am}) {
    EXPECT_EQ(text.find("unit=\""), std::string::npos) << text;
    EXPECT_NE(text.find("codl_build_info{daemon="), std::string::npos) << text;
  }
  EXPECT_EQ(cm.find("experiment=\""), std::string::npos) << cm;
  // Connections by role, TCP ones too: under --insecure every caller is admin, so the agent's
  // connection to the controller and the controller's to the agent count as admin.
  EXPECT_EQ(Value(cm, "codl_controller_connections{role=\"user-read\"}"), 0) << cm;
  EXPECT_GE(Value(cm, "codl_controller_connections{role=\"admin\"}"), 1) << cm;
  EXPECT_GE(Value(am, "codl_agent_connections{role=\"admin\"}"), 1) << am;
  EXPECT_EQ(Value(am, "codl_agent_connections{role=\"controller\"}"), 0) << am;
  EXPECT_EQ(am.find("codl_agent_antagonist_units_per_second{"), std::string::npos) << am;

  for (const auto& [name, text] : {std::pair{"controller", cm}, std::pair{"agent", am}}) {
    WriteFile(dir + "/" + name + ".prom", text);
    auto check =
        RunCommand({"/bin/sh", "-c", "promtool check metrics < " + dir + "/" + name + ".prom"}, 30);
    EXPECT_EQ(check.exit_code, 0) << name << ":\n" << check.out << check.err;
    EXPECT_EQ(check.out + check.err, "") << name << ": promtool found problems";
  }
  RemoveTree(dir);
}

}  // namespace
}  // namespace codl::testing
