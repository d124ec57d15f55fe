// codl-agent: the per-node daemon. See docs/configuration.md and `codl-agent --help`.
// Settings come from /etc/codl/agent.yaml (or --config FILE) first; flags given on the command
// line override the file key by key.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "agent/agent.h"
#include "lib/daemon/cli_flags.h"
#include "lib/daemon/daemon_config.h"
#include "lib/daemon/service_notifier.h"

namespace cfg = codl::daemon;

namespace {

// File values for every key whose flag was not given (labels and token are merged in main).
void ApplyFile(const cfg::AgentConfig& f, const CLI::App& app, codl::agent::AgentOptions& o) {
  cfg::FromFileUnlessFlag(app, "--controller", f.controller, o.controller);
  cfg::FromFileUnlessFlag(app, "--listen", f.listen, o.listen);
  cfg::FromFileUnlessFlag(app, "--advertise", f.advertise, o.advertise);
  cfg::FromFileUnlessFlag(app, "--id", f.id, o.agent_id);
  cfg::FromFileUnlessFlag(app, "--scratch-root", f.scratch_roots, o.scratch_roots);
  cfg::FromFileUnlessFlag(app, "--no-victim", f.allow_victim, o.allow_victim);
  cfg::FromFileUnlessFlag(app, "--max-level", f.max_level, o.max_level);
  cfg::FromFileUnlessFlag(app, "--lease", f.lease_s, o.lease_s);
  cfg::FromFileUnlessFlag(app, "--heartbeat-interval", f.heartbeat_interval_s, o.heartbeat_interval_s);
  cfg::FromFileUnlessFlag(app, "--state-dir", f.state_dir, o.state_dir);
  cfg::FromFileUnlessFlag(app, "--metrics-listen", f.metrics_listen, o.metrics_listen);
  if (f.tls && !app.count("--tls-ca") && !app.count("--tls-cert") && !app.count("--tls-key")) {
    o.tls = codl::rpc::TlsFiles{f.tls->ca, f.tls->cert, f.tls->key};
  }
}

}  // namespace

int main(int argc, char** argv) {
  codl::agent::AgentOptions o;
  std::vector<std::string> labels;
  std::string config_path, token, token_file;
  CLI::App app{
      "codl-agent: per-node CoDL daemon. Registers with the controller, heartbeats, and runs\n"
      "antagonists (codl-inject children) and victim commands on its behalf. If the controller\n"
      "is silent for longer than the lease, every antagonist is stopped (dead-man switch)."};
  auto* config_flag = cfg::AddConfigFlag(app, &config_path, cfg::kDefaultAgentConfig);
  app.add_option("--controller", o.controller, "controller address (host:port or unix:/path)")
      ->capture_default_str();
  app.add_option("--listen", o.listen, "address of this agent's service; port 0 = ephemeral")
      ->capture_default_str();
  app.add_option("--advertise", o.advertise, "address the controller should dial (default: --listen)");
  app.add_option("--id", o.agent_id, "agent id (default: hostname)");
  app.add_option("--label", labels,
                 "user label KEY=VALUE (repeatable), e.g. --label role=gpu; added to the file's");
  app.add_option("--scratch-root", o.scratch_roots,
                 "directory injectors may write under (repeatable; default: $TMPDIR or /tmp)");
  app.add_flag("!--no-victim", o.allow_victim, "refuse to run victim commands");
  app.add_option("--max-level", o.max_level, "highest antagonist level allowed (0..1]")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--lease", o.lease_s, "dead-man lease: stop antagonists after this much controller silence")
      ->transform(cfg::DurationFlag())
      ->default_str("10s");
  app.add_option("--heartbeat-interval", o.heartbeat_interval_s,
                 "heartbeat period until the controller sets its own at registration")
      ->transform(cfg::DurationFlag())
      ->default_str("1s");
  app.add_option("--state-dir", o.state_dir, "where the agent keeps its leftovers file");
  app.add_option("--inject-binary", o.inject_binary, "codl-inject to run (default: beside codl-agent)")
      ->capture_default_str();
  app.add_option("--metrics-listen", o.metrics_listen,
                 "serve Prometheus /metrics on this host:port (default: off)");
  app.add_option("--tls-ca", o.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", o.tls.cert, "PEM certificate (mTLS)");
  app.add_option("--tls-key", o.tls.key, "PEM private key (mTLS)");
  app.add_option("--token", token, "bearer token the controller must present (also CODL_TOKEN)");
  app.add_option("--token-file", token_file, "file holding the bearer token");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto path = cfg::ResolveConfigPath(config_path, config_flag->count() > 0, cfg::kDefaultAgentConfig);
  auto file = path.ok() ? cfg::LoadAgentConfig(*path) : codl::Err(path.error());
  if (!file.ok()) {
    fprintf(stderr, "codl-agent: %s\n", file.error().c_str());
    return 2;
  }
  ApplyFile(*file, app, o);
  auto merged = cfg::MergeLabels(file->labels, labels);
  auto bearer = cfg::ResolveToken(token, token_file, file->token_file);
  if (!merged.ok() || !bearer.ok()) {
    fprintf(stderr, "codl-agent: %s\n", (merged.ok() ? bearer.error() : merged.error()).c_str());
    return 2;
  }
  o.labels = *merged;
  codl::rpc::SetBearerToken(*bearer);
  if (!path->empty()) spdlog::info("codl-agent: config {}", *path);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts

  codl::agent::Agent agent(o);
  cfg::ServiceNotifier notifier;
  if (auto s = agent.Start(); !s.ok()) {
    fprintf(stderr, "codl-agent: %s\n", s.error().c_str());
    return 1;
  }
  notifier.Ready("serving on " + agent.address() + ", controller " + o.controller);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("codl-agent: signal {}, stopping antagonists and exiting", sig);
  notifier.Stopping();
  agent.Shutdown();
  return 0;
}
