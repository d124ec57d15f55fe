// codl-controller: schedules experiments, talks to agents, stores results. See `--help`.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/units.h"
#include "controller/controller.h"

int main(int argc, char** argv) {
  codl::controller::ControllerOptions o;
  std::string lease = "10s", heartbeat = "1s", token;
  CLI::App app{
      "codl-controller: the CoDL control plane. Agents register and heartbeat here; `codlctl\n"
      "submit` sends experiments here; every trial is committed to SQLite before the next one\n"
      "starts, so a restarted controller still serves every completed trial."};
  app.add_option("--listen", o.listen, "gRPC address (host:port or unix:/path)")->capture_default_str();
  app.add_option("--db", o.db_path, "SQLite database file")->capture_default_str();
  app.add_option("--lease", lease, "antagonist lease agents enforce when the controller goes silent")
      ->capture_default_str();
  app.add_option("--heartbeat-interval", heartbeat, "how often agents heartbeat")->capture_default_str();
  app.add_option("--tls-ca", o.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", o.tls.cert, "PEM certificate (mTLS)");
  app.add_option("--tls-key", o.tls.key, "PEM private key (mTLS)");
  app.add_option("--token", token, "bearer token clients and agents must present (also CODL_TOKEN)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto l = codl::ParseDuration(lease);
  auto h = codl::ParseDuration(heartbeat);
  if (!l.ok() || *l <= 0) {
    fprintf(stderr, "codl-controller: --lease: %s\n", l.ok() ? "must be > 0" : l.error().c_str());
    return 2;
  }
  if (!h.ok() || *h <= 0) {
    fprintf(stderr, "codl-controller: --heartbeat-interval: %s\n", h.ok() ? "must be > 0" : h.error().c_str());
    return 2;
  }
  o.lease_s = *l;
  o.heartbeat_interval_s = *h;
  o.agent_dead_after_s = std::max(3 * *h, 2.0);
  if (token.empty() && getenv("CODL_TOKEN")) token = getenv("CODL_TOKEN");
  codl::rpc::SetBearerToken(token);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  codl::controller::Controller controller(o);
  if (auto s = controller.Start(); !s.ok()) {
    fprintf(stderr, "codl-controller: %s\n", s.error().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("codl-controller: signal {}, shutting down", sig);
  controller.Shutdown();
  return 0;
}
