// codl-controller: schedules experiments, talks to agents, stores results. See `--help` and
// docs/configuration.md. Settings come from /etc/codl/controller.yaml (or --config FILE) first;
// flags given on the command line override the file key by key.
#include <signal.h>

#include <algorithm>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "lib/daemon/cli_flags.h"
#include "lib/daemon/daemon_config.h"
#include "lib/daemon/service_notifier.h"
#include "controller/controller.h"

namespace cfg = codl::daemon;

namespace {

// File values for every key whose flag was not given (the token is resolved in main).
void ApplyFile(const cfg::ControllerConfig& f, const CLI::App& app,
               codl::controller::ControllerOptions& o) {
  cfg::FromFileUnlessFlag(app, "--listen", f.listen, o.listen);
  cfg::FromFileUnlessFlag(app, "--db", f.database, o.db_path);
  cfg::FromFileUnlessFlag(app, "--lease", f.lease_s, o.lease_s);
  cfg::FromFileUnlessFlag(app, "--heartbeat-interval", f.heartbeat_interval_s, o.heartbeat_interval_s);
  if (f.tls && !app.count("--tls-ca") && !app.count("--tls-cert") && !app.count("--tls-key")) {
    o.tls = codl::rpc::TlsFiles{f.tls->ca, f.tls->cert, f.tls->key};
  }
  cfg::FromFileUnlessFlag(app, "--metrics-listen", f.metrics_listen, o.metrics_listen);
}

}  // namespace

int main(int argc, char** argv) {
  codl::controller::ControllerOptions o;
  std::string config_path, token, token_file;
  CLI::App app{
      "codl-controller: the CoDL control plane. Agents register and heartbeat here; `codlctl\n"
      "submit` sends experiments here; every trial is committed to SQLite before the next one\n"
      "starts, so a restarted controller still serves every completed trial."};
  auto* config_flag = cfg::AddConfigFlag(app, &config_path, cfg::kDefaultControllerConfig);
  app.add_option("--listen", o.listen, "gRPC address (host:port or unix:/path)")->capture_default_str();
  app.add_option("--db", o.db_path, "SQLite database file")->capture_default_str();
  app.add_option("--lease", o.lease_s, "antagonist lease agents enforce when the controller goes silent")
      ->transform(cfg::DurationFlag())
      ->default_str("10s");
  app.add_option("--heartbeat-interval", o.heartbeat_interval_s, "how often agents heartbeat")
      ->transform(cfg::DurationFlag())
      ->default_str("1s");
  app.add_option("--metrics-listen", o.metrics_listen,
                 "serve Prometheus /metrics on this host:port (default: off)");
  app.add_option("--tls-ca", o.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", o.tls.cert, "PEM certificate (mTLS)");
  app.add_option("--tls-key", o.tls.key, "PEM private key (mTLS)");
  app.add_option("--token", token, "bearer token clients and agents must present (also CODL_TOKEN)");
  app.add_option("--token-file", token_file, "file holding the bearer token");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto path = cfg::ResolveConfigPath(config_path, config_flag->count() > 0, cfg::kDefaultControllerConfig);
  auto file = path.ok() ? cfg::LoadControllerConfig(*path) : codl::Err(path.error());
  if (!file.ok()) {
    fprintf(stderr, "codl-controller: %s\n", file.error().c_str());
    return 2;
  }
  ApplyFile(*file, app, o);
  auto bearer = cfg::ResolveToken(token, token_file, file->token_file);
  if (!bearer.ok()) {
    fprintf(stderr, "codl-controller: %s\n", bearer.error().c_str());
    return 2;
  }
  codl::rpc::SetBearerToken(*bearer);
  o.agent_dead_after_s = std::max(3 * o.heartbeat_interval_s, 2.0);
  if (!path->empty()) spdlog::info("codl-controller: config {}", *path);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  codl::controller::Controller controller(o);
  cfg::ServiceNotifier notifier;
  if (auto s = controller.Start(); !s.ok()) {
    fprintf(stderr, "codl-controller: %s\n", s.error().c_str());
    return 1;
  }
  notifier.Ready("serving on " + controller.address() + ", database " + o.db_path);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("codl-controller: signal {}, shutting down", sig);
  notifier.Stopping();
  controller.Shutdown();
  return 0;
}
