// codl-controller: schedules experiments, talks to agents, stores results. See `--help` and
// docs/configuration.md. Settings come from /etc/codl/controller.yaml (or --config FILE) first;
// flags given on the command line override the file key by key. The shared daemon plumbing is
// lib/daemon/bootstrap.h.
#include <algorithm>
#include <memory>

#include "controller/controller.h"
#include "lib/common/tunables.h"
#include "lib/common/version.h"
#include "lib/daemon/bootstrap.h"
#include "lib/daemon/cli_flags.h"

namespace cfg = codl::daemon;
namespace tunables = codl::tunables;

namespace {

// File values for every key whose flag was not given (tls and token: in the bootstrap).
void ApplyFile(const cfg::ControllerConfig& f, const CLI::App& app,
               codl::controller::ControllerOptions& o) {
  cfg::FromFileUnlessFlag(app, "--listen", f.listen, o.listen);
  cfg::FromFileUnlessFlag(app, "--db", f.database, o.db_path);
  cfg::FromFileUnlessFlag(app, "--lease", f.lease_s, o.lease_s);
  cfg::FromFileUnlessFlag(app, "--heartbeat-interval", f.heartbeat_interval_s,
                          o.heartbeat_interval_s);
  cfg::FromFileUnlessFlag(app, "--metrics-listen", f.metrics_listen, o.metrics_listen);
  cfg::FromFileUnlessFlag(app, "--resume-interrupted", f.resume_interrupted, o.resume_interrupted);
  cfg::FromFileUnlessFlag(app, "--agent-rejoin-grace", f.agent_rejoin_grace_s,
                          o.agent_rejoin_grace_s);
}

}  // namespace

int main(int argc, char** argv) {
  codl::controller::ControllerOptions o;
  cfg::DaemonBootstrap boot(
      "codl-controller",
      "codl-controller: the CoDL control plane. Agents register and heartbeat here; `codlctl\n"
      "submit` sends experiments here; every trial is committed to SQLite before the next one\n"
      "starts, so a restarted controller still serves every completed trial.",
      cfg::kDefaultControllerConfig);
  CLI::App& app = boot.app();
  app.set_version_flag("--version", std::string("codl-controller ") + codl::CodlVersion());
  app.add_option("--listen", o.listen, "gRPC address (host:port or unix:/path)")
      ->capture_default_str();
  app.add_option("--db", o.db_path, "SQLite database file")->capture_default_str();
  boot.AddDurationFlag("--lease", &o.lease_s,
                       "antagonist lease agents enforce when the controller goes silent",
                       tunables::DurationFlagText(tunables::kDefaultLeaseS))
      ->check(CLI::Range(tunables::kMinLeaseS, 1e7));
  boot.AddDurationFlag("--heartbeat-interval", &o.heartbeat_interval_s,
                       "how often agents heartbeat",
                       tunables::DurationFlagText(tunables::kDefaultHeartbeatIntervalS))
      ->check(CLI::Range(tunables::kMinHeartbeatIntervalS, 1e7));
  app.add_flag("--resume-interrupted", o.resume_interrupted,
               "at start, resume the experiments the previous controller's crash interrupted "
               "(as `codlctl resume ID` would); queued ones always run again");
  boot.AddDurationFlag("--agent-rejoin-grace", &o.agent_rejoin_grace_s,
                       "after start, how long an experiment whose nodes match no live agent "
                       "waits for agents to (re-)register before it fails (0: fail at once)",
                       tunables::DurationFlagText(tunables::kDefaultAgentRejoinGraceS),
                       /*allow_zero=*/true)
      ->check(CLI::Range(0.0, 86400.0));
  boot.AddMetricsFlag(&o.metrics_listen);
  boot.AddHealthFlag("codl.v1.Controller");
  boot.AddTlsFlags(&o.tls.ca, &o.tls.cert, &o.tls.key);
  boot.AddTokenFlags("file holding the token the controller presents to agents",
                     "tokens file (ROLE ID SHA256) of the agents and users the controller accepts",
                     &o.insecure);

  cfg::ControllerConfig file;
  if (auto exit = boot.Load(argc, argv, cfg::LoadControllerConfig, &file)) return *exit;
  ApplyFile(file, app, o);
  codl::rpc::SetBearerToken(boot.token());
  o.tokens = boot.tokens();
  o.agent_dead_after_s = tunables::AgentDeadAfterS(o.heartbeat_interval_s);

  std::unique_ptr<codl::controller::Controller> controller;
  return boot.Serve({
      .start =
          [&] {
            controller = std::make_unique<codl::controller::Controller>(o);
            return controller->Start();
          },
      .ready = [&] { return "serving on " + controller->address() + ", database " + o.db_path; },
      .stop = [&] { controller->Shutdown(); },
      .on_signal = "shutting down",
  });
}
