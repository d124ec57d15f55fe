// Multi-host test on one machine: three "hosts" made of network namespaces, the controller in
// a fourth, all wired to a bridge in a fifth ("switch") namespace. Every interface lives inside a
// namespace this test creates, so nothing touches the root namespace's network; deleting the
// namespaces removes the bridge and every veth. The addresses are not loopback, so plaintext gRPC
// is refused by design: the test makes a throwaway CA and certificates with the openssl CLI and
// runs controller, agents and codlctl with mutual TLS.
//
//   codl-t-<pid>-sw:  br0 ── p-c, p-h1, p-h2, p-h3   (veth ends, bridge ports)
//   codl-t-<pid>-c:   eth0 10.77.0.1/24  codl-controller, codlctl
//   codl-t-<pid>-hN:  eth0 10.77.0.1N/24 codl-agent --id hN
//
// Skipped (with the reason) where `ip netns add` or veth/bridge creation is not permitted, or
// where `ip` or `openssl` is missing. Leftovers of a killed run: bench/netns_cleanup.sh.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lib/store/store.h"
#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

constexpr const char* kSubnet = "10.77.0";  // private; exists only inside the test's namespaces
constexpr int kHosts = 3;

std::string FindTool(const std::string& name) {
  for (const char* dir :
       {"/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/local/bin"}) {
    std::string p = std::string(dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Namespaces "codl-t-<pid>-*" left by a test process that no longer exists (killed mid-run).
void RemoveStaleNamespaces(const std::string& ip) {
  auto r = RunCommand({ip, "netns", "list"}, 10);
  std::stringstream ss(r.out);
  std::string line;
  while (std::getline(ss, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind("codl-t-", 0) != 0) continue;
    std::string rest = name.substr(7);
    pid_t pid = static_cast<pid_t>(atol(rest.substr(0, rest.find('-')).c_str()));
    if (pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) {
      RunCommand({ip, "netns", "del", name}, 10);
    }
  }
}

// The namespaces and links. The destructor deletes every namespace it created, whatever
// happened; the processes inside must be gone first (they are declared after it, so they are
// destroyed before it).
class Topology {
 public:
  explicit Topology(std::string ip)
      : ip_(std::move(ip)), prefix_("codl-t-" + std::to_string(getpid())) {}
  ~Topology() { TearDown(); }

  std::string ns(const std::string& role) const { return prefix_ + "-" + role; }
  std::string address_of(const std::string& role) const {
    return role == "c" ? std::string(kSubnet) + ".1" : std::string(kSubnet) + ".1" + role.substr(1);
  }

  // Empty on success, else the failing command and what it said.
  std::string Build() {
    RemoveStaleNamespaces(ip_);
    if (auto e = AddNs("sw"); !e.empty()) return e;
    for (const char* c : {"link add br0 type bridge", "link set br0 up", "link set lo up"}) {
      if (auto e = InNs("sw", c); !e.empty()) return e;
    }
    std::vector<std::string> roles = {"c"};
    for (int i = 1; i <= kHosts; ++i) roles.push_back("h" + std::to_string(i));
    for (const auto& role : roles) {
      if (auto e = AddNs(role); !e.empty()) return e;
      // One veth pair per host: "p-<role>" in the switch (a bridge port), "eth0" in the host.
      if (auto e = Ip({"-n", ns("sw"), "link", "add", "p-" + role, "type", "veth", "peer", "name",
                       "eth0", "netns", ns(role)});
          !e.empty()) {
        return e;
      }
      if (auto e = Ip({"-n", ns("sw"), "link", "set", "p-" + role, "master", "br0", "up"});
          !e.empty())
        return e;
      if (auto e = Ip({"-n", ns(role), "addr", "add", address_of(role) + "/24", "dev", "eth0"});
          !e.empty())
        return e;
      if (auto e = Ip({"-n", ns(role), "link", "set", "eth0", "up"}); !e.empty()) return e;
      if (auto e = Ip({"-n", ns(role), "link", "set", "lo", "up"}); !e.empty()) return e;
    }
    return "";
  }

  // Cuts a host off the switch: its bridge port goes down, packets to and from it are dropped.
  std::string Cut(const std::string& role) {
    return Ip({"-n", ns("sw"), "link", "set", "p-" + role, "down"});
  }

  // argv run inside namespace `role`.
  std::vector<std::string> Exec(const std::string& role, std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {ip_, "netns", "exec", ns(role)});
    return argv;
  }

  void TearDown() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it)
      RunCommand({ip_, "netns", "del", *it}, 10);
    created_.clear();
  }

 private:
  std::string AddNs(const std::string& role) {
    if (auto e = Ip({"netns", "add", ns(role)}); !e.empty()) return e;
    created_.push_back(ns(role));
    return "";
  }
  std::string InNs(const std::string& role, const std::string& words) {
    std::vector<std::string> argv = {"-n", ns(role)};
    std::stringstream ss(words);
    for (std::string w; ss >> w;) argv.push_back(w);
    return Ip(argv);
  }
  std::string Ip(std::vector<std::string> args) {
    args.insert(args.begin(), ip_);
    auto r = RunCommand(args, 10);
    if (r.exit_code == 0) return "";
    std::string cmd;
    for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    return "'" + cmd + "' failed (exit " + std::to_string(r.exit_code) + "): " + Trim(r.err);
  }

  std::string ip_;
  std::string prefix_;
  std::vector<std::string> created_;
};

// A throwaway CA and one certificate per party (controller, h1..h3, codlctl), each valid for
// both server and client auth, with the party's IP and its codl:// identity (docs/security.md)
// as subjectAltName. Empty on success.
std::string MakeCertificates(const std::string& openssl, const std::string& dir,
                             const std::map<std::string, std::string>& ip_by_name) {
  auto run = [&](std::vector<std::string> argv) -> std::string {
    argv.insert(argv.begin(), openssl);
    auto r = RunCommand(argv, 30, dir);
    if (r.exit_code == 0) return "";
    return "openssl " + argv[1] + " failed: " + Trim(r.err);
  };
  if (auto e = run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj",
                    "/CN=codl-netns-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
      !e.empty()) {
    return e;
  }
  for (const auto& [name, ip] : ip_by_name) {
    const std::string identity = name == "controller" ? "codl://controller"
                                 : name == "codlctl"  ? "codl://user-submit/codlctl"
                                                      : "codl://agent/" + name;
    WriteFile(dir + "/" + name + ".ext",
              "basicConstraints=CA:FALSE\n"
              "keyUsage=critical,digitalSignature,keyEncipherment\n"
              "extendedKeyUsage=serverAuth,clientAuth\n"
              "subjectAltName=IP:" +
                  ip + ",DNS:" + name + ",URI:" + identity + "\n");
    if (auto e = run({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                      "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name});
        !e.empty()) {
      return e;
    }
    if (auto e = run({"x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                      "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile",
                      name + ".ext"});
        !e.empty()) {
      return e;
    }
  }
  return "";
}

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-netns"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string dir_;
};

TEST_F(NetnsTest, ThreeHostsWithMtlsAndACutLinkStopsOnlyThatHostsAntagonists) {
  const auto wall0 = std::chrono::steady_clock::now();
  const std::string ip = FindTool("ip"), openssl = FindTool("openssl");
  if (ip.empty()) GTEST_SKIP() << "iproute2 'ip' not found: cannot build network namespaces";
  if (openssl.empty()) GTEST_SKIP() << "openssl CLI not found: cannot make the mTLS certificates";
  {
    // Probe: creating a network namespace needs CAP_SYS_ADMIN (and a writable /run/netns).
    const std::string probe = "codl-t-" + std::to_string(getpid()) + "-probe";
    auto r = RunCommand({ip, "netns", "add", probe}, 10);
    if (r.exit_code != 0) {
      GTEST_SKIP() << "'ip netns add' is not permitted here (exit " << r.exit_code
                   << "): " << Trim(r.err) << " -- needs root / CAP_SYS_ADMIN + CAP_NET_ADMIN";
    }
    RunCommand({ip, "netns", "del", probe}, 10);
  }

  Topology topo(ip);  // destroyed after the processes below
  if (std::string e = topo.Build(); !e.empty()) {
    topo.TearDown();
    GTEST_SKIP() << "cannot build the namespace topology (veth/bridge not permitted?): " << e;
  }
  std::map<std::string, std::string> ips = {{"controller", topo.address_of("c")},
                                            {"codlctl", topo.address_of("c")}};
  for (int i = 1; i <= kHosts; ++i)
    ips["h" + std::to_string(i)] = topo.address_of("h" + std::to_string(i));
  ASSERT_EQ(MakeCertificates(openssl, dir_, ips), "");
  auto tls = [&](const std::string& who) {
    return std::vector<std::string>{"--tls-ca",   dir_ + "/ca.pem",
                                    "--tls-cert", dir_ + "/" + who + ".pem",
                                    "--tls-key",  dir_ + "/" + who + ".key"};
  };
  const std::string ctl_addr = topo.address_of("c") + ":7700";
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };

  // The processes: declared after `topo`, so they are killed before the namespaces go.
  Process controller(topo.Exec("c", with({Bin("codl-controller"), "--listen", ctl_addr, "--db",
                                          dir_ + "/c.db", "--heartbeat-interval", "200ms"},
                                         tls("controller"))),
                     dir_ + "/controller.log");
  std::map<std::string, Process> agents;
  for (int i = 1; i <= kHosts; ++i) {
    const std::string h = "h" + std::to_string(i);
    agents[h] =
        Process(topo.Exec(h, with({Bin("codl-agent"), "--controller", ctl_addr, "--id", h,
                                   "--listen", topo.address_of(h) + ":7701", "--scratch-root", dir_,
                                   "--state-dir", dir_ + "/state-" + h},
                                  tls(h))),
                dir_ + "/agent-" + h + ".log");
  }
  auto ctl = [&](std::vector<std::string> args, double timeout = 120) {
    std::vector<std::string> argv =
        with({Bin("codlctl"), "--controller", ctl_addr}, tls("codlctl"));
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(topo.Exec("c", argv), timeout);
  };
  auto logs = [&] {
    std::string all;
    for (const char* f : {"controller.log", "agent-h1.log", "agent-h2.log", "agent-h3.log"}) {
      all += std::string("==== ") + f + "\n" + ReadFile(dir_ + "/" + f);
    }
    return all;
  };

  // All three agents registered over mTLS across the bridge.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto r = ctl({"agents", "--json"}, 10);
        if (r.exit_code != 0) return false;
        size_t alive = 0;
        std::stringstream ss(r.out);
        for (std::string line; std::getline(ss, line);)
          alive += line.find("\"alive\":true") != std::string::npos;
        return alive == kHosts;
      },
      20))
      << logs();
  // Plaintext to a non-loopback address is refused by the client before it dials.
  {
    auto r = RunCommand(topo.Exec("c", {Bin("codlctl"), "--controller", ctl_addr, "agents"}), 10);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("plaintext"), std::string::npos) << r.err;
  }

  // 1. The victim on h1, one antagonist placed on h2 and h3 (started together on both).
  WriteFile(dir_ + "/exp.yaml",
            "name: netns-multihost\n"
            "victim:\n"
            "  command: [sh, -c, 'for i in 1 2 3 4 5; do echo \"{\\\"step\\\": $i, "
            "\\\"step_time_s\\\": 0.02}\"; sleep 0.02; done']\n"
            "  progress: {format: jsonl, field: step_time_s}\n"
            "  timeout: 30s\n"
            "  nodes: {hosts: [h1]}\n"
            "antagonists:\n"
            "  - name: membw\n"
            "    injector: memcpy\n"
            "    options: {threads: 1, buffer_size: 4MiB}\n"
            "    rates: [100MiB/s, 200MiB/s]\n"
            "    nodes: {hosts: [h2, h3]}\n"
            "pairings: singles\n"
            "repetitions: 1\n"
            "settle: 1s\n"
            "lease: 3s\n");
  auto sub = ctl({"submit", dir_ + "/exp.yaml", "--watch"}, 90);
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err << logs();
  auto res = ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  std::set<std::string> pairings;
  for (const auto& p : j["pairings"]) {
    pairings.insert(p["pairing"].get<std::string>());
    EXPECT_EQ(p["n_failed"].get<int>(), 0) << p.dump();
    for (const auto& a : p["antagonists"]) {
      EXPECT_GT(a["achieved_rate"].get<double>(), 0) << a.dump();
    }
  }
  EXPECT_EQ(pairings, (std::set<std::string>{"baseline", "membw@100MiB/s", "membw@200MiB/s"}))
      << res.out;
  // Per node (the JSON summary merges nodes): the trial records in the database.
  {
    auto store = store::Store::Open(dir_ + "/c.db");
    ASSERT_TRUE(store.ok()) << store.error();
    auto trials = (*store)->GetTrials(j["experiment_id"].get<std::string>(), /*with_series=*/false);
    ASSERT_TRUE(trials.ok()) << trials.error();
    int with_antagonists = 0;
    for (const auto& t : *trials) {
      EXPECT_EQ(t.victim_node, "h1");
      if (t.baseline) continue;
      ++with_antagonists;
      std::set<std::string> nodes;
      for (const auto& a : t.antagonists) {
        nodes.insert(a.node);
        EXPECT_GT(a.achieved_rate, 0) << a.node;
        EXPECT_LT(std::abs(a.start_skew_s), 0.1)
            << a.node << ": start skew " << a.start_skew_s << " s";
      }
      EXPECT_EQ(nodes, (std::set<std::string>{"h2", "h3"})) << "trial " << t.index;
    }
    EXPECT_EQ(with_antagonists, 2);
  }
  EXPECT_TRUE(DescendantsMatching(agents["h2"].pid(), "codl-inject").empty());
  EXPECT_TRUE(DescendantsMatching(agents["h3"].pid(), "codl-inject").empty());

  // 2. A long trial; h3 loses its link while the victim runs. Its antagonist must stop on its
  // own (lease 3 s); h2's keeps running until the controller stops it at the end of the trial.
  const double kVictimS = 20;
  WriteFile(dir_ + "/long.yaml",
            "name: netns-cut\n"
            "victim: {command: [sleep, '" +
                std::to_string(static_cast<int>(kVictimS)) +
                "'], progress: {format: wall}, timeout: 60s, nodes: {hosts: [h1]}}\n"
                "antagonists:\n"
                "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 4MiB},\n"
                "     rates: [100MiB/s], nodes: {hosts: [h2, h3]}}\n"
                "pairings: singles\n"
                "repetitions: 1\n"
                "order: {randomize: false}\n"
                "warmup_trials: 0\n"  // the first victim run must be the trial's
                "settle: 1s\n"
                "lease: 3s\n");
  auto sub2 = ctl({"submit", dir_ + "/long.yaml"});
  ASSERT_EQ(sub2.exit_code, 0) << sub2.err << logs();
  const pid_t h1 = agents["h1"].pid(), h2 = agents["h2"].pid(), h3 = agents["h3"].pid();
  const std::string victim_cmd = "sleep " + std::to_string(static_cast<int>(kVictimS));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !DescendantsMatching(h1, victim_cmd).empty() &&
               !DescendantsMatching(h2, "codl-inject memcpy").empty() &&
               !DescendantsMatching(h3, "codl-inject memcpy").empty();
      },
      30))
      << logs();
  const auto victim_seen = std::chrono::steady_clock::now();
  ASSERT_EQ(topo.Cut("h3"), "");
  const auto cut = std::chrono::steady_clock::now();
  const double kLeaseS = 3;
  bool h3_gone =
      WaitUntil([&] { return DescendantsMatching(h3, "codl-inject").empty(); }, kLeaseS + 2);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  std::cout << "h3's antagonist stopped " << took << " s after its link was cut (lease " << 3
            << " s)\n";
  EXPECT_TRUE(h3_gone) << "h3's antagonist still runs " << took << " s after its link was cut\n"
                       << logs();
  EXPECT_LE(took, kLeaseS + 2) << "lease 3 s + 2 s";
  EXPECT_GE(took, kLeaseS - 0.5) << "h3's antagonist stopped before its lease ran out";
  EXPECT_TRUE(agents["h3"].Running()) << "the cut-off agent itself keeps running";
  // h2 is still in touch with the controller: its antagonist runs on with the victim.
  EXPECT_FALSE(DescendantsMatching(h2, "codl-inject memcpy").empty()) << logs();
  EXPECT_FALSE(DescendantsMatching(h1, victim_cmd).empty()) << "the victim should still run";
  // ...and is stopped by the controller when the victim ends, not by its lease.
  const double left =
      kVictimS -
      std::chrono::duration<double>(std::chrono::steady_clock::now() - victim_seen).count();
  EXPECT_TRUE(WaitUntil([&] { return DescendantsMatching(h2, "codl-inject").empty(); }, left + 5))
      << logs();
  const std::string h2_log = ReadFile(dir_ + "/agent-h2.log"),
                    h3_log = ReadFile(dir_ + "/agent-h3.log");
  EXPECT_EQ(h2_log.find("lease expired"), std::string::npos) << h2_log;
  EXPECT_NE(h2_log.find("-membw-h2 stopped: achieved"), std::string::npos) << h2_log;
  EXPECT_NE(h3_log.find("lease expired"), std::string::npos) << h3_log;
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  EXPECT_LT(total, 90) << "the test must stay bounded";
  // Teardown (processes, then namespaces) runs in reverse declaration order, also on failure.
}

}  // namespace
}  // namespace codl::testing
