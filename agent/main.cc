// codl-agent: the per-node daemon. See docs/configuration.md and `codl-agent --help`.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "agent/agent.h"
#include "common/units.h"

int main(int argc, char** argv) {
  codl::agent::AgentOptions o;
  std::vector<std::string> labels;
  std::string lease = "10s", token;
  CLI::App app{
      "codl-agent: per-node CoDL daemon. Registers with the controller, heartbeats, and runs\n"
      "antagonists (codl-inject children) and victim commands on its behalf. If the controller\n"
      "is silent for longer than the lease, every antagonist is stopped (dead-man switch)."};
  app.add_option("--controller", o.controller, "controller address (host:port or unix:/path)")
      ->capture_default_str();
  app.add_option("--listen", o.listen, "address of this agent's service; port 0 = ephemeral")
      ->capture_default_str();
  app.add_option("--advertise", o.advertise, "address the controller should dial (default: --listen)");
  app.add_option("--id", o.agent_id, "agent id (default: hostname)");
  app.add_option("--label", labels, "user label KEY=VALUE (repeatable), e.g. --label role=gpu");
  app.add_option("--scratch-root", o.scratch_roots,
                 "directory injectors may write under (repeatable; default: $TMPDIR or /tmp)");
  app.add_flag("!--no-victim", o.allow_victim, "refuse to run victim commands");
  app.add_option("--max-level", o.max_level, "highest antagonist level allowed (0..1]")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--lease", lease, "dead-man lease: stop antagonists after this much controller silence")
      ->capture_default_str();
  app.add_option("--state-dir", o.state_dir, "where the agent keeps its leftovers file");
  app.add_option("--inject-binary", o.inject_binary, "codl-inject to run (default: beside codl-agent)")
      ->capture_default_str();
  app.add_option("--tls-ca", o.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", o.tls.cert, "PEM certificate (mTLS)");
  app.add_option("--tls-key", o.tls.key, "PEM private key (mTLS)");
  app.add_option("--token", token, "bearer token the controller must present (also CODL_TOKEN)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const auto& kv : labels) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      fprintf(stderr, "codl-agent: --label '%s': expected KEY=VALUE\n", kv.c_str());
      return 2;
    }
    o.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto l = codl::ParseDuration(lease);
  if (!l.ok() || *l <= 0) {
    fprintf(stderr, "codl-agent: --lease: %s\n", l.ok() ? "must be > 0" : l.error().c_str());
    return 2;
  }
  o.lease_s = *l;
  if (token.empty() && getenv("CODL_TOKEN")) token = getenv("CODL_TOKEN");
  codl::rpc::SetBearerToken(token);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts

  codl::agent::Agent agent(o);
  if (auto s = agent.Start(); !s.ok()) {
    fprintf(stderr, "codl-agent: %s\n", s.error().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("codl-agent: signal {}, stopping antagonists and exiting", sig);
  agent.Shutdown();
  return 0;
}
