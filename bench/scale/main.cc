// codl-load-agents' command line: see load_agents.h and bench/run_scale_bench.sh.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>

#include "bench/scale/load_agents.h"

namespace {

void AddOptions(CLI::App& app, codl::bench::LoadOptions& o) {
  app.add_option("--controller", o.controller, "controller address")->capture_default_str();
  app.add_option("--agents,-n", o.agents, "how many agents")
      ->check(CLI::Range(1, 20000))
      ->capture_default_str();
  app.add_option("--listen-host", o.listen_host, "host the N agent ports listen on (loopback)")
      ->capture_default_str();
  app.add_option("--id-prefix", o.id_prefix, "agent ids are PREFIX0000, PREFIX0001, ...")
      ->capture_default_str();
  app.add_option("--duration", o.duration_s, "exit after this many seconds (0: at SIGINT/SIGTERM)");
  app.add_option("--victim-time", o.victim_s, "seconds a RunVictim takes")->capture_default_str();
  app.add_option("--register-spread", o.register_spread_s,
                 "spread registrations over this many seconds")
      ->capture_default_str();
  app.add_option("--out", o.out,
                 "write the JSON report (start arrivals, heartbeat stats) here at exit");
  app.add_option(
         "--min-connect-timeout-ms", o.min_connect_timeout_ms,
         "GRPC_ARG_MIN_RECONNECT_BACKOFF_MS of the agents' channels, as rpc::MakeChannel sets "
         "it (gRPC also uses it as the connect timeout); 0 = gRPC's default (20 s)")
      ->capture_default_str();
  app.add_option("--setup-estimate", o.setup_estimate_s,
                 "seconds every agent answers to EstimateSetup (a real agent answers 0 for noop)")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  app.add_option("--tls-ca", o.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", o.tls.cert, "PEM certificate (mTLS)");
  app.add_option("--tls-key", o.tls.key, "PEM private key (mTLS)");
}

// Enough descriptors for every agent's server and channel.
void RaiseFileLimit(int agents) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < static_cast<rlim_t>(4 * agents + 256)) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 4 * agents + 256);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Waits for a signal in `set` (or the duration), printing the registered count as it changes.
void WaitPrintingRegistrations(const sigset_t& set, double duration_s,
                               codl::bench::LoadAgents& load) {
  const auto t0 = std::chrono::steady_clock::now();
  int last = -1;
  for (;;) {
    timespec ts{0, 200'000'000};
    if (sigtimedwait(&set, nullptr, &ts) > 0) break;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (duration_s > 0 && elapsed > duration_s) break;
    int n = load.Registered();
    if (n != last) {
      printf("registered %d\n", n);
      fflush(stdout);
      last = n;
    }
  }
}

void WriteReport(const nlohmann::json& report, const std::string& path) {
  if (!path.empty()) {
    std::ofstream out(path);
    out << report.dump() << "\n";
  }
  auto n = [&](const char* key) { return static_cast<long long>(report[key].get<int64_t>()); };
  fprintf(stderr,
          "codl-load-agents: %lld registrations (%lld failed), %lld heartbeats ok, %lld failed, "
          "%lld starts, %lld misrouted, %lld telemetry streams (%lld events), %lld estimates\n",
          n("registrations"), n("register_failures"), n("heartbeats_ok"), n("heartbeats_failed"),
          n("starts"), n("misrouted"), n("streams"), n("telemetry_events"), n("estimates"));
}

}  // namespace

int main(int argc, char** argv) {
  codl::bench::LoadOptions o;
  CLI::App app{
      "codl-load-agents: N lightweight agents speaking the real agent protocol (register,\n"
      "heartbeat, the Agent service) against one codl-controller; spawns nothing. For the\n"
      "control-plane scale benchmark (bench/run_scale_bench.sh)."};
  AddOptions(app, o);
  CLI11_PARSE(app, argc, argv);
  if (!codl::rpc::IsLocalAddress(o.listen_host + ":0")) {
    fprintf(stderr,
            "codl-load-agents: --listen-host must be a loopback address (this is a benchmark)\n");
    return 2;
  }
  RaiseFileLimit(o.agents);
  codl::rpc::DisableMutexDeadlockDetection();  // as the daemons do (rpc::StartServer)
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto load = codl::bench::MakeLoadAgents(o);
  if (codl::Status s = load->Start(); !s.ok()) {
    fprintf(stderr, "codl-load-agents: %s\n", s.error().c_str());
    return 1;
  }
  fprintf(stderr, "codl-load-agents: %d agents listening on %s, registering with %s\n", o.agents,
          o.listen_host.c_str(), o.controller.c_str());
  WaitPrintingRegistrations(set, o.duration_s, *load);
  load->Shutdown();
  WriteReport(load->Report(), o.out);
  _exit(0);  // the agents' channels and the server need no orderly teardown
}
