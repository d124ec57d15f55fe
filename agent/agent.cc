#include "agent/agent.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "agent/agent_metrics.h"
#include "agent/agent_service.h"
#include "agent/antagonist_manager.h"
#include "agent/child_process.h"
#include "agent/controller_link.h"
#include "agent/gpu_telemetry.h"
#include "agent/lease_monitor.h"
#include "agent/leftovers.h"
#include "agent/placement.h"
#include "agent/scratch_roots.h"
#include "agent/telemetry_hub.h"
#include "lib/rpc/connection_registry.h"
#include "lib/rpc/health.h"

namespace codl::agent {

std::string VictimUserLabel(const AgentOptions& options) {
  if (const auto& r = options.victim_uid_range) {
    return "uids " + std::to_string(r->first) + "-" + std::to_string(r->second) +
           " (one per experiment)";
  }
  const auto& run_as = options.victim_run_as;
  if (run_as) return run_as->user.empty() ? UserName(run_as->uid) : run_as->user;
  return UserName(geteuid());
}

Agent::Agent(AgentOptions options) : options_(std::move(options)) {
  if (options_.agent_id.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    options_.agent_id = host;
  }
}

Agent::~Agent() { Shutdown(); }

bool Agent::registered() const { return link_ && link_->registered(); }

int Agent::running_antagonists() const { return antagonists_ ? antagonists_->Running() : 0; }

Status Agent::Start() {
  // Never a world-writable directory by default (scratch_roots.h).
  auto roots = ScratchRootsOrDefault(options_.scratch_roots, geteuid() == 0);
  if (!roots.ok()) return roots.status();
  options_.scratch_roots = *roots;
  // What victim.cache may name: the scratch roots and the cache roots.
  std::vector<std::string> cache_roots = options_.scratch_roots;
  cache_roots.insert(cache_roots.end(), options_.cache_roots.begin(), options_.cache_roots.end());
  for (const std::string& w : WorldWritableRootWarnings(cache_roots)) spdlog::warn("{}", w);
  CleanLeftovers();
  lease_ = std::make_unique<LeaseMonitor>(SystemClock::Get());
  placer_ = Placer::Detect(options_.agent_id);
  spdlog::info("placement and CPU accounting: {}{}", PlacementModeName(placer_->mode()),
               placer_->reason().empty() ? "" : " (" + placer_->reason() + ")");
  // NVML for the GPU telemetry, loaded and initialized now: nvmlInit can take seconds, which
  // would otherwise fall into the first victim's run.
  spdlog::info("GPU telemetry: {}", NodeNvml().note);
  AntagonistPolicy ap;
  ap.placer = placer_.get();
  ap.inject_binary = options_.inject_binary;
  ap.scratch_roots = options_.scratch_roots;
  ap.default_lease_s = options_.lease_s;
  telemetry_ = std::make_unique<TelemetryHub>();
  ap.telemetry = telemetry_.get();
  // The link is created below; the relay reaches it through `this` once it exists.
  ap.relay.publish = [this](const std::string& k, const std::string& v) {
    return link_ ? link_->PublishRendezvous(k, v) : Status(Err("no controller link"));
  };
  ap.relay.fetch = [this](const std::string& k, double wait_s) -> Result<std::string> {
    if (!link_) return Err("no controller link");
    return link_->FetchRendezvous(k, wait_s);
  };
  antagonists_ = std::make_unique<AntagonistManager>(ap, lease_.get(), SystemClock::Get());
  AgentPolicy policy{options_.allow_victim, options_.max_level, placer_.get(), {}, nullptr};
  policy.victim.run_as = options_.victim_run_as;
  policy.victim.clean_env = options_.victim_env_clean.value_or(geteuid() == 0);
  policy.victim.env_keep = options_.victim_env_keep;
  policy.victim.home_root = options_.scratch_roots.front();
  policy.victim.cache_roots = std::move(cache_roots);
  policy.victim.cache_limits = {options_.cache_max_bytes, options_.cache_max_time_s};
  if (const auto& r = options_.victim_uid_range) {
    auto pool = VictimIdentities::Open({r->first, r->second}, options_.victim_uid_lock_dir,
                                       SystemClock::Get(), VictimIdentities::kDefaultIdleReleaseS);
    if (!pool.ok()) return pool.status();
    policy.uid_pool = std::shared_ptr<VictimIdentities>(std::move(*pool));
  }
  service_ = std::make_unique<AgentServiceImpl>(antagonists_.get(), SystemClock::Get(),
                                                std::move(policy), telemetry_.get());

  metrics_ = std::make_unique<AgentMetrics>();
  if (!options_.metrics_listen.empty()) {
    if (Status s = metrics_->Serve(options_.metrics_listen); !s.ok()) return s;
    spdlog::info("agent metrics on http://{}/metrics", options_.metrics_listen);
  }

  auto started = rpc::StartServer(rpc::Endpoint{options_.listen, options_.tls, options_.insecure},
                                  {service_.get()}, "agent", options_.tokens);
  if (!started.ok()) return started.status();
  server_ = std::move(started->server);
  listener_ = std::move(started->listener);
  advertised_ = options_.advertise.empty() ? started->address : options_.advertise;
  rpc::SetServing(server_.get(), "codl.v1.Agent", true);
  spdlog::info("agent {} listening on {}", options_.agent_id, advertised_);

  ControllerLink::Options lo;
  lo.controller = rpc::Endpoint{options_.controller, options_.tls};
  lo.agent_id = options_.agent_id;
  lo.advertise = advertised_;
  lo.labels = DetectHostLabels(options_.inject_binary);
  lo.labels["placement"] = PlacementModeName(placer_->mode());  // `codlctl agents` shows it
  // Who runs the victims here (victim_user, or the agent's own user when it is not root or
  // embedded): `codlctl agents`, `run` and `submit` show it.
  lo.labels["victim_user"] = VictimUserLabel(options_);
  for (const auto& [k, v] : options_.labels) lo.labels[k] = v;
  lo.heartbeat_interval_s = options_.heartbeat_interval_s;
  link_ = std::make_unique<ControllerLink>(lo, lease_.get(), SystemClock::Get(),
                                           [this] { return antagonists_->Running(); });
  if (Status s = link_->Start(); !s.ok()) return s;
  watchdog_ = std::thread([this] { WatchdogLoop(); });
  return Status::Ok();
}

void Agent::Shutdown() {
  if (stopping_.exchange(true)) return;
  rpc::MarkDraining(server_.get());  // health: NOT_SERVING while antagonists are stopped
  if (link_) link_->Stop();
  if (antagonists_) antagonists_->StopAll("agent shutting down");
  if (watchdog_.joinable()) watchdog_.join();
  if (listener_) listener_->Stop();  // it hands connections to the server: first
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (service_) service_->Shutdown();
  if (server_) server_->Wait();
  WriteLeftoversFile();
}

void Agent::WatchdogLoop() {
  int ticks = 0;
  while (!stopping_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    antagonists_->EnforceLeases();
    if (++ticks % 10 == 0) {
      WriteLeftoversFile();
      auto st = antagonists_->GetStats();
      AgentMetrics::Snapshot m;
      m.running = antagonists_->Running();
      m.controller_silence_s = lease_->SecondsSinceContact();
      m.started = st.started;
      m.lease_expirations = st.lease_expirations;
      m.victims_ok = service_->victims_ok();
      m.victims_failed = service_->victims_failed();
      m.achieved_by_injector = st.achieved_by_injector;
      m.connections_by_role = rpc::OpenConnectionsByRole();
      metrics_->Update(m);
    }
  }
}

// The leftovers file lists (pid, start time) of the agent's running children. Children die with
// the agent (PDEATHSIG), but a restarted agent still checks, and removes injector scratch files
// that a killed codl-inject could not.
void Agent::WriteLeftoversFile() {
  if (options_.state_dir.empty() || !antagonists_) return;
  // Every child (antagonists, calibrations, victims) with its process group: agent/leftovers.h.
  std::vector<ChildRecord> children;
  for (const auto& [pid, ticks] : LiveChildren()) children.push_back({pid, ticks, ""});
  if (Status s = WriteLeftovers(options_.state_dir, std::move(children)); !s.ok()) {
    spdlog::warn("leftovers file: {}", s.error());
  }
}

void Agent::CleanLeftovers() {
  if (!options_.state_dir.empty()) {
    auto killed = KillLeftovers(options_.state_dir);
    if (!killed.ok()) spdlog::warn("leftovers of a previous run: {}", killed.error());
  }
  // Scratch files of codl-inject runs that were killed before they could clean up.
  std::vector<std::string> argv = {options_.inject_binary, "--cleanup-stale"};
  for (const auto& r : options_.scratch_roots) {
    argv.push_back("--scratch-root");
    argv.push_back(r);
  }
  ChildProcess::Options o;
  o.argv = argv;
  std::string out;
  o.on_stdout = [&out](std::string_view l) { out += std::string(l) + "\n"; };
  auto c = ChildProcess::Spawn(std::move(o));
  if (!c.ok()) {
    spdlog::warn("cannot run '{} --cleanup-stale': {}", options_.inject_binary, c.error());
    return;
  }
  if (!(*c)->WaitFor(30)) (*c)->Kill();
  if ((*c)->exit_code() != 0) {
    spdlog::warn("'{} --cleanup-stale' failed: {}", options_.inject_binary, (*c)->stderr_tail());
  } else if (!out.empty()) {
    spdlog::info("removed stale injector files:\n{}", out);
  }
}

}  // namespace codl::agent
