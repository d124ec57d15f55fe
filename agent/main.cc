// codl-agent: the per-node daemon. See docs/configuration.md and `codl-agent --help`.
// Settings come from /etc/codl/agent.yaml (or --config FILE) first; flags given on the command
// line override the file key by key. The shared daemon plumbing is lib/daemon/bootstrap.h.
#include <unistd.h>

#include <memory>

#include <spdlog/spdlog.h>

#include "agent/agent.h"
#include "agent/subreaper.h"
#include "lib/common/tunables.h"
#include "lib/common/version.h"
#include "lib/daemon/bootstrap.h"
#include "lib/daemon/cli_flags.h"
#include "lib/daemon/victim_user.h"

namespace cfg = codl::daemon;
namespace tunables = codl::tunables;

namespace {

// File values for every key whose flag was not given (labels, tls and token: in main/bootstrap).
void ApplyFile(const cfg::AgentConfig& f, const CLI::App& app, codl::agent::AgentOptions& o) {
  cfg::FromFileUnlessFlag(app, "--controller", f.controller, o.controller);
  cfg::FromFileUnlessFlag(app, "--listen", f.listen, o.listen);
  cfg::FromFileUnlessFlag(app, "--advertise", f.advertise, o.advertise);
  cfg::FromFileUnlessFlag(app, "--id", f.id, o.agent_id);
  cfg::FromFileUnlessFlag(app, "--scratch-root", f.scratch_roots, o.scratch_roots);
  cfg::FromFileUnlessFlag(app, "--cache-root", f.cache_roots, o.cache_roots);
  cfg::FromFileUnlessFlag(app, "--no-victim", f.allow_victim, o.allow_victim);
  cfg::FromFileUnlessFlag(app, "--max-level", f.max_level, o.max_level);
  cfg::FromFileUnlessFlag(app, "--lease", f.lease_s, o.lease_s);
  cfg::FromFileUnlessFlag(app, "--heartbeat-interval", f.heartbeat_interval_s,
                          o.heartbeat_interval_s);
  cfg::FromFileUnlessFlag(app, "--state-dir", f.state_dir, o.state_dir);
  cfg::FromFileUnlessFlag(app, "--metrics-listen", f.metrics_listen, o.metrics_listen);
}

}  // namespace

int main(int argc, char** argv) {
  codl::agent::AgentOptions o;
  std::vector<std::string> labels;
  cfg::DaemonBootstrap boot(
      "codl-agent",
      "codl-agent: per-node CoDL daemon. Registers with the controller, heartbeats, and runs\n"
      "antagonists (codl-inject children) and victim commands on its behalf. If the controller\n"
      "is silent for longer than the lease, every antagonist is stopped (dead-man switch).",
      cfg::kDefaultAgentConfig);
  CLI::App& app = boot.app();
  app.set_version_flag("--version", std::string("codl-agent ") + codl::CodlVersion());
  app.add_option("--controller", o.controller, "controller address (host:port or unix:/path)")
      ->capture_default_str();
  app.add_option("--listen", o.listen, "address of this agent's service; port 0 = ephemeral")
      ->capture_default_str();
  app.add_option("--advertise", o.advertise,
                 "address the controller should dial (default: --listen)");
  app.add_option("--id", o.agent_id, "agent id (default: hostname)");
  app.add_option("--label", labels,
                 "user label KEY=VALUE (repeatable), e.g. --label role=gpu; added to the file's");
  app.add_option("--scratch-root", o.scratch_roots,
                 "directory injectors may write under (repeatable; default: $TMPDIR or /tmp)");
  app.add_option("--cache-root", o.cache_roots,
                 "directory whose files victim.cache may evict from or read into the page cache, "
                 "besides the scratch roots (repeatable; never written)");
  app.add_flag("!--no-victim", o.allow_victim, "refuse to run victim commands");
  app.add_option("--max-level", o.max_level, "highest antagonist level allowed (0..1]")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  boot.AddDurationFlag("--lease", &o.lease_s,
                       "dead-man lease: stop antagonists after this much controller silence",
                       tunables::DurationFlagText(tunables::kDefaultLeaseS))
      ->check(CLI::Range(tunables::kMinLeaseS, 1e7));
  boot.AddDurationFlag("--heartbeat-interval", &o.heartbeat_interval_s,
                       "heartbeat period until the controller sets its own at registration",
                       tunables::DurationFlagText(tunables::kDefaultHeartbeatIntervalS))
      ->check(CLI::Range(tunables::kMinHeartbeatIntervalS, 1e7));
  app.add_option("--state-dir", o.state_dir, "where the agent keeps its leftovers file");
  app.add_option("--inject-binary", o.inject_binary,
                 "codl-inject to run (default: beside codl-agent)")
      ->capture_default_str();
  boot.AddMetricsFlag(&o.metrics_listen);
  boot.AddHealthFlag("codl.v1.Agent");
  boot.AddTlsFlags(&o.tls.ca, &o.tls.cert, &o.tls.key);
  boot.AddTokenFlags("file holding the token this agent presents to the controller",
                     "tokens file (ROLE ID SHA256) of the callers this agent accepts", &o.insecure);
  std::string victim_user;
  app.add_option("--victim-user", victim_user,
                 "user victims run as when the agent is root (default: nobody; 'root' only when "
                 "set explicitly)");
  std::string uid_range, victim_env;
  app.add_option("--victim-uid-range", uid_range,
                 "root agents: each experiment's victims run as a uid of their own from LO-HI "
                 "(e.g. 61000-61999; uids no user has), instead of --victim-user");
  app.add_option("--victim-uid-lock-dir", o.victim_uid_lock_dir,
                 "where the uids of --victim-uid-range are locked (shared by the agents of a host)")
      ->capture_default_str();
  app.add_option("--victim-env", victim_env,
                 "clean: victims get PATH, LANG, a per-trial HOME and TMPDIR, the experiment's env "
                 "and CoDL's variables, nothing of the agent's; inherit: the agent's environment "
                 "too (default: clean for a root agent, inherit otherwise)")
      ->check(CLI::IsMember({"clean", "inherit"}));
  app.add_option("--victim-env-keep", o.victim_env_keep,
                 "with a clean environment, also pass this variable of the agent's (repeatable)");

  cfg::AgentConfig file;
  if (auto exit = boot.Load(argc, argv, cfg::LoadAgentConfig, &file)) return *exit;
  ApplyFile(file, app, o);
  auto merged = cfg::MergeLabels(file.labels, labels);
  if (!merged.ok()) return boot.Fail(merged.error());
  o.labels = *merged;
  codl::rpc::SetBearerToken(boot.token());
  o.tokens = boot.tokens();
  cfg::FromFileUnlessFlag(app, "--victim-user", file.victim_user, victim_user);
  cfg::FromFileUnlessFlag(app, "--victim-uid-range", file.victim_uid_range, uid_range);
  cfg::FromFileUnlessFlag(app, "--victim-env", file.victim_env, victim_env);
  cfg::FromFileUnlessFlag(app, "--victim-uid-lock-dir", file.victim_uid_lock_dir,
                          o.victim_uid_lock_dir);
  cfg::FromFileUnlessFlag(app, "--victim-env-keep", file.victim_env_keep, o.victim_env_keep);
  for (const auto& name : o.victim_env_keep) {
    if (!cfg::IsEnvName(name))
      return boot.Fail("--victim-env-keep '" + name + "': not a variable name");
  }
  if (!victim_env.empty()) o.victim_env_clean = victim_env == "clean";
  if (!uid_range.empty()) {
    if (!victim_user.empty())
      return boot.Fail("victim_user and victim_uid_range are exclusive: choose one");
    if (geteuid() != 0)
      return boot.Fail("victim_uid_range needs a root agent (only root can switch uids)");
    auto range = cfg::ParseUidRange(uid_range);
    if (!range.ok()) return boot.Fail("victim_uid_range " + range.error());
    if (codl::Status s = cfg::CheckUidRangeIsFree(*range, geteuid()); !s.ok())
      return boot.Fail(s.error());
    o.victim_uid_range = *range;
  } else {
    auto run_as = cfg::ResolveVictimUser(victim_user, geteuid());
    if (!run_as.ok()) return boot.Fail(run_as.error());
    o.victim_run_as = *run_as;
    if (geteuid() == 0 && !o.victim_run_as) {
      spdlog::warn("victim_user: root: victim commands run as root");
    }
  }

  // A victim's daemonized descendants (double fork, setsid) are re-parented to the agent,
  // reaped, and killed with their experiment (agent/subreaper.h).
  if (codl::Status s = codl::agent::EnableSubreaper(); !s.ok()) {
    spdlog::warn("{}: a victim's daemonized processes may outlive it", s.error());
  }

  std::unique_ptr<codl::agent::Agent> agent;
  return boot.Serve({
      .start =
          [&] {
            agent = std::make_unique<codl::agent::Agent>(o);
            return agent->Start();
          },
      .ready = [&] { return "serving on " + agent->address() + ", controller " + o.controller; },
      .stop = [&] { agent->Shutdown(); },
      .on_signal = "stopping antagonists and exiting",
  });
}
