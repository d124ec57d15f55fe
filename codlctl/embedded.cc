#include "codlctl/embedded.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/agent.h"
#include "agent/scratch_roots.h"
#include "controller/agent_registry.h"
#include "controller/controller.h"
#include "lib/common/tunables.h"

namespace codl::cli {

EmbeddedCluster::EmbeddedCluster() = default;
EmbeddedCluster::~EmbeddedCluster() { Shutdown(); }

Status EmbeddedCluster::Start(const std::string& db_path, double lease_s,
                              const std::vector<std::string>& scratch_roots) {
  // Unix sockets in a fresh 0700 directory (mkdtemp): no other local user can reach the
  // embedded agent, which runs whatever the experiment says (docs/security.md).
  std::string tmpl = (std::filesystem::temp_directory_path() / "codl-run-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Err("cannot create a private directory for the sockets");
  dir_ = tmpl;
  controller::ControllerOptions co;
  co.listen = "unix:" + dir_ + "/controller.sock";
  co.db_path = db_path;
  co.lease_s = lease_s;
  co.heartbeat_interval_s = tunables::kEmbeddedHeartbeatIntervalS;
  co.agent_dead_after_s = tunables::kEmbeddedAgentDeadAfterS;
  // An experiment a killed `codlctl run` left queued is not someone's to run now: it is marked
  // interrupted (resumable), like the one it left running.
  co.requeue_queued = false;
  // Its one agent has registered before anything is submitted: a selector it does not match
  // (hosts: [gpu-1] written for a cluster) fails at once.
  co.agent_rejoin_grace_s = 0;
  controller_ = std::make_unique<controller::Controller>(co);
  if (Status s = controller_->Start(); !s.ok()) return s;
  controller_address_ = controller_->address();

  agent::AgentOptions ao;
  ao.controller = controller_address_;
  ao.listen = "unix:" + dir_ + "/agent.sock";
  ao.lease_s = lease_s;
  ao.heartbeat_interval_s = tunables::kEmbeddedHeartbeatIntervalS;
  ao.labels["embedded"] = "true";
  // Yours, private: $CODL_SCRATCH_ROOTS, else ~/.cache/codl/scratch (agent/scratch_roots.h),
  // even as root (a system agent's /var/lib/codl/scratch is not this run's).
  auto roots = agent::ScratchRootsOrDefault(scratch_roots, /*system=*/false);
  if (!roots.ok()) return roots.status();
  ao.scratch_roots = *roots;
  // The victim is your own command, run as you: it sees your shell's environment (a cluster
  // agent started as root gives victims a clean one, docs/security.md).
  ao.victim_env_clean = false;
  // victim.cache may evict or read any file you can read: the agent is you here.
  ao.cache_roots = {"/"};
  agent_ = std::make_unique<agent::Agent>(ao);
  if (Status s = agent_->Start(); !s.ok()) return s;
  // The first experiment needs a live agent: wait for its registration (usually a few ms).
  for (int i = 0; i < 200; ++i) {
    for (const auto& a : controller_->agents()->List()) {
      if (a.alive()) return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Err("the embedded agent did not register within 10 s");
}

void EmbeddedCluster::Shutdown() {
  // Controller first: it cancels the running trial and stops its antagonists via the agent.
  if (controller_) controller_->Shutdown();
  if (agent_) agent_->Shutdown();
  controller_.reset();
  agent_.reset();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

}  // namespace codl::cli
