// codl-agent: the per-node daemon. See docs/configuration.md and `codl-agent --help`.
// Settings come from /etc/codl/agent.yaml (or --config FILE) first; flags given on the command
// line override the file key by key. The shared daemon plumbing is lib/daemon/bootstrap.h.
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/agent.h"
#include "agent/subreaper.h"
#include "lib/common/tunables.h"
#include "lib/common/units.h"
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
  cfg::FromFileUnlessFlag(app, "--cache-max-time", f.cache_max_time_s, o.cache_max_time_s);
  cfg::FromFileUnlessFlag(app, "--no-victim", f.allow_victim, o.allow_victim);
  cfg::FromFileUnlessFlag(app, "--max-level", f.max_level, o.max_level);
  cfg::FromFileUnlessFlag(app, "--lease", f.lease_s, o.lease_s);
  cfg::FromFileUnlessFlag(app, "--heartbeat-interval", f.heartbeat_interval_s,
                          o.heartbeat_interval_s);
  cfg::FromFileUnlessFlag(app, "--state-dir", f.state_dir, o.state_dir);
  cfg::FromFileUnlessFlag(app, "--metrics-listen", f.metrics_listen, o.metrics_listen);
}

// Flags whose text is resolved after the config file is loaded (ResolveOptions).
struct TextFlags {
  std::vector<std::string> labels;
  std::string cache_max_bytes, victim_user, uid_range, victim_env;
};

// Every flag of codl-agent: into `o` directly, or as text into `t`.
void AddFlags(cfg::DaemonBootstrap& boot, codl::agent::AgentOptions& o, TextFlags& t) {
  CLI::App& app = boot.app();
  app.set_version_flag("--version", std::string("codl-agent ") + codl::CodlVersion());
  app.add_option("--controller", o.controller, "controller address (host:port or unix:/path)")
      ->capture_default_str();
  app.add_option("--listen", o.listen, "address of this agent's service; port 0 = ephemeral")
      ->capture_default_str();
  app.add_option("--advertise", o.advertise,
                 "address the controller should dial (default: --listen)");
  app.add_option("--id", o.agent_id, "agent id (default: hostname)");
  app.add_option("--label", t.labels,
                 "user label KEY=VALUE (repeatable), e.g. --label role=gpu; added to the file's");
  app.add_option("--scratch-root", o.scratch_roots,
                 "directory injectors may write under (repeatable; default: $CODL_SCRATCH_ROOTS, "
                 "else a private 0711 directory: /var/lib/codl/scratch as root, else "
                 "~/.cache/codl/scratch; a world-writable one such as /tmp is warned about)");
  app.add_option("--cache-root", o.cache_roots,
                 "directory whose files victim.cache may evict from or read into the page cache, "
                 "besides the scratch roots (repeatable; never written)");
  app.add_option("--cache-max-bytes", t.cache_max_bytes,
                 "victim.cache: most bytes under its paths per trial, e.g. 64GiB; more fails the "
                 "trial (default: the node's memory)");
  boot.AddDurationFlag("--cache-max-time", &o.cache_max_time_s,
                       "victim.cache: most time to evict or warm its paths per trial",
                       tunables::DurationFlagText(o.cache_max_time_s))
      ->check(CLI::Range(0.1, 1e7));
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
  app.add_option("--victim-user", t.victim_user,
                 "user victims run as when the agent is root (default: nobody; 'root' only when "
                 "set explicitly)");
  app.add_option("--victim-uid-range", t.uid_range,
                 "root agents: each experiment's victims run as a uid of their own from LO-HI "
                 "(e.g. 61000-61999; uids no user has), instead of --victim-user");
  app.add_option("--victim-uid-lock-dir", o.victim_uid_lock_dir,
                 "where the uids of --victim-uid-range are locked (shared by the agents of a host)")
      ->capture_default_str();
  app.add_option("--victim-env", t.victim_env,
                 "clean: victims get PATH, LANG, a per-trial HOME and TMPDIR, the experiment's env "
                 "and CoDL's variables, nothing of the agent's; inherit: the agent's environment "
                 "too (default: clean for a root agent, inherit otherwise)")
      ->check(CLI::IsMember({"clean", "inherit"}));
  app.add_option("--victim-env-keep", o.victim_env_keep,
                 "with a clean environment, also pass this variable of the agent's (repeatable)");
}

// The file's values under the flags', then the settings that need both or a check: labels,
// the token, the victim's identity and environment, the cache cap. An error's text, or nothing.
std::optional<std::string> ResolveOptions(cfg::DaemonBootstrap& boot, const cfg::AgentConfig& file,
                                          TextFlags& t, codl::agent::AgentOptions& o) {
  const CLI::App& app = boot.app();
  ApplyFile(file, app, o);
  auto merged = cfg::MergeLabels(file.labels, t.labels);
  if (!merged.ok()) return merged.error();
  o.labels = *merged;
  codl::rpc::SetBearerToken(boot.token());
  o.tokens = boot.tokens();
  cfg::FromFileUnlessFlag(app, "--victim-user", file.victim_user, t.victim_user);
  cfg::FromFileUnlessFlag(app, "--victim-uid-range", file.victim_uid_range, t.uid_range);
  cfg::FromFileUnlessFlag(app, "--victim-env", file.victim_env, t.victim_env);
  cfg::FromFileUnlessFlag(app, "--victim-uid-lock-dir", file.victim_uid_lock_dir,
                          o.victim_uid_lock_dir);
  cfg::FromFileUnlessFlag(app, "--victim-env-keep", file.victim_env_keep, o.victim_env_keep);
  if (!t.cache_max_bytes.empty()) {
    auto bytes = codl::ParseSize(t.cache_max_bytes);
    if (!bytes.ok() || *bytes < (1u << 20)) {
      return std::string("--cache-max-bytes '" + t.cache_max_bytes + "': " +
                         (bytes.ok() ? std::string("must be at least 1MiB") : bytes.error()));
    }
    o.cache_max_bytes = static_cast<int64_t>(*bytes);
  } else if (file.cache_max_bytes) {
    o.cache_max_bytes = static_cast<int64_t>(*file.cache_max_bytes);
  }
  for (const auto& name : o.victim_env_keep) {
    if (!cfg::IsEnvName(name))
      return std::string("--victim-env-keep '" + name + "': not a variable name");
  }
  if (!t.victim_env.empty()) o.victim_env_clean = t.victim_env == "clean";
  if (!t.uid_range.empty()) {
    if (!t.victim_user.empty())
      return std::string("victim_user and victim_uid_range are exclusive: choose one");
    if (geteuid() != 0)
      return std::string("victim_uid_range needs a root agent (only root can switch uids)");
    auto range = cfg::ParseUidRange(t.uid_range);
    if (!range.ok()) return std::string("victim_uid_range " + range.error());
    if (codl::Status s = cfg::CheckUidRangeIsFree(*range, geteuid()); !s.ok())
      return std::string(s.error());
    o.victim_uid_range = *range;
  } else {
    auto run_as = cfg::ResolveVictimUser(t.victim_user, geteuid());
    if (!run_as.ok()) return std::string(run_as.error());
    o.victim_run_as = *run_as;
    if (geteuid() == 0 && !o.victim_run_as) {
      spdlog::warn("victim_user: root: victim commands run as root");
    }
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  codl::agent::AgentOptions o;
  TextFlags text;
  cfg::DaemonBootstrap boot(
      "codl-agent",
      "codl-agent: per-node CoDL daemon. Registers with the controller, heartbeats, and runs\n"
      "antagonists (codl-inject children) and victim commands on its behalf. If the controller\n"
      "is silent for longer than the lease, every antagonist is stopped (dead-man switch).",
      cfg::kDefaultAgentConfig);
  AddFlags(boot, o, text);
  cfg::AgentConfig file;
  if (auto exit = boot.Load(argc, argv, cfg::LoadAgentConfig, &file)) return *exit;
  if (auto error = ResolveOptions(boot, file, text, o)) return boot.Fail(*error);

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
