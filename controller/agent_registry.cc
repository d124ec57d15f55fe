#include "controller/agent_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "lib/spec/node_selector_match.h"

namespace codl::controller {

AgentRegistry::AgentRegistry(const Clock* clock, AgentClientFactory factory, double dead_after_s,
                             double evict_after_s, size_t max_agents)
    : clock_(clock),
      factory_(std::move(factory)),
      dead_after_s_(dead_after_s),
      evict_after_s_(std::max(evict_after_s, dead_after_s)),
      max_agents_(max_agents) {}

// Forgetting is a memory bound, not a liveness decision (AliveLocked is): the sweep runs at
// most once per kEvictSweepS, so that a heartbeat costs O(1) and not O(agents) (a sweep per
// heartbeat makes the controller's CPU quadratic in the agent count). A lookup still forgets
// its own expired entry exactly on time (ExpiredLocked).
void AgentRegistry::EvictLocked() {
  const double now = clock_->MonotonicSeconds();
  if (swept_once_ && now - last_sweep_s_ < kEvictSweepS) return;
  swept_once_ = true;
  last_sweep_s_ = now;
  for (auto it = agents_.begin(); it != agents_.end();) {
    if (ExpiredLocked(it->second, now)) {
      spdlog::info("agent {} evicted: no heartbeat for {:.0f} s", it->first,
                   now - it->second.last_heartbeat_s);
      it = agents_.erase(it);
    } else {
      ++it;
    }
  }
}

bool AgentRegistry::ExpiredLocked(const Entry& e, double now_s) const {
  return now_s - e.last_heartbeat_s > evict_after_s_;
}

Status AgentRegistry::Register(const v1::AgentInfo& info, const PeerIdentity& who,
                               const v1::NodeSnapshot& node, const std::string& session) {
  if (info.agent_id().empty()) return InvalidArgument("agent id is empty");
  if (info.agent_id().size() > 256) return InvalidArgument("agent id is longer than 256 bytes");
  if (info.address().empty()) {
    return InvalidArgument("agent " + info.agent_id() + " sent no address");
  }
  std::lock_guard<std::mutex> l(mu_);
  EvictLocked();
  auto existing = agents_.find(info.agent_id());
  if (existing != agents_.end() && ExpiredLocked(existing->second, clock_->MonotonicSeconds())) {
    agents_.erase(existing);
    existing = agents_.end();
  }
  if (existing != agents_.end() && AliveLocked(existing->second) &&
      !SameIdentity(existing->second.owner, who)) {
    return PermissionDenied("agent id '" + info.agent_id() + "' is live and registered by " +
                            existing->second.owner.Describe() + "; refusing re-registration by " +
                            who.Describe());
  }
  if (existing != agents_.end() && AliveLocked(existing->second) &&
      (existing->second.session != session || existing->second.info.address() != info.address())) {
    // Two agents with one id (cloned VMs, containers sharing a hostname): the live one keeps it.
    char silent[32];
    std::snprintf(silent, sizeof silent, "%.1f",
                  clock_->MonotonicSeconds() - existing->second.last_heartbeat_s);
    return Error{"agent id '" + info.agent_id() + "' is taken by a live agent at " +
                     existing->second.info.address() + " (last heartbeat " + silent +
                     " s ago); refusing another agent with that id at " + info.address() +
                     ": give each agent its own id (codl-agent --id NAME). A restarted "
                     "agent takes the id over once its predecessor has been silent for " +
                     std::to_string(static_cast<int>(std::ceil(dead_after_s_))) + " s",
                 StatusCode::kAlreadyExists};
  }
  if (existing == agents_.end() && agents_.size() >= max_agents_) {
    swept_once_ = false;  // at the cap, expired entries must not take the places: sweep now
    EvictLocked();
  }
  if (existing == agents_.end() && agents_.size() >= max_agents_) {
    return ResourceExhausted("the controller already knows " + std::to_string(agents_.size()) +
                             " agents (the limit)");
  }
  // The factory only builds a channel object (no I/O), so holding the lock is cheap.
  auto client = factory_(info.agent_id(), info.address());
  if (!client)
    return Err("cannot create a client for agent " + info.agent_id() + " at " + info.address());
  Entry& e = agents_[info.agent_id()];
  bool known = e.client != nullptr;
  e.owner = who;
  e.session = session;
  e.info = info;
  e.info.set_registered_unix_ms(clock_->UnixNanos() / 1'000'000);
  e.client = std::move(client);
  e.last_heartbeat_s = clock_->MonotonicSeconds();
  e.samples.clear();
  e.node = node;
  e.load_avg_1m = -1;
  spdlog::info("agent {} {} at {}", info.agent_id(), known ? "re-registered" : "registered",
               info.address());
  return Status::Ok();
}

bool AgentRegistry::Heartbeat(const std::string& agent_id, double rtt_s, double offset_s,
                              int running, const PeerIdentity& who, double load_avg_1m,
                              const std::string& session) {
  std::lock_guard<std::mutex> l(mu_);
  EvictLocked();
  auto it = agents_.find(agent_id);
  if (it == agents_.end() || !SameIdentity(it->second.owner, who)) return false;
  if (!session.empty() && !it->second.session.empty() && session != it->second.session)
    return false;
  const double now = clock_->MonotonicSeconds();
  if (ExpiredLocked(it->second, now)) {  // forgotten: it must register again
    agents_.erase(it);
    return false;
  }
  Entry& e = it->second;
  e.last_heartbeat_s = now;
  e.info.set_last_heartbeat_unix_ms(clock_->UnixNanos() / 1'000'000);
  e.info.set_running_antagonists(std::max(running, 0));
  if (std::isfinite(load_avg_1m) && load_avg_1m >= 0) e.load_avg_1m = load_avg_1m;
  // Only plausible samples feed the clock filter: a NaN or huge value would win or poison it.
  if (std::isfinite(rtt_s) && std::isfinite(offset_s) && rtt_s > 0 && rtt_s < 60 &&
      std::fabs(offset_s) < 1e6) {
    e.samples.emplace_back(rtt_s, offset_s);
    if (e.samples.size() > 16) e.samples.pop_front();
  }
  return true;
}

double AgentRegistry::LastSeen(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? -1 : it->second.last_heartbeat_s;
}

std::string AgentRegistry::Session(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? std::string() : it->second.session;
}

bool AgentRegistry::AliveLocked(const Entry& e) const {
  return clock_->MonotonicSeconds() - e.last_heartbeat_s <= dead_after_s_;
}

std::vector<v1::AgentInfo> AgentRegistry::List() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<v1::AgentInfo> out;
  for (const auto& [id, e] : agents_) {
    v1::AgentInfo i = e.info;
    i.set_alive(AliveLocked(e));
    double best_rtt = 1e9, offset = 0;
    for (const auto& [rtt, off] : e.samples) {
      if (rtt < best_rtt) best_rtt = rtt, offset = off;
    }
    i.set_clock_offset_s(offset);
    out.push_back(std::move(i));
  }
  return out;
}

std::shared_ptr<AgentClient> AgentRegistry::Client(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? nullptr : it->second.client;
}

bool AgentRegistry::Alive(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it != agents_.end() && AliveLocked(it->second);
}

bool AgentRegistry::IsLiveAgent(const PeerIdentity& who) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [id, e] : agents_) {
    if (AliveLocked(e) && SameIdentity(e.owner, who)) return true;
  }
  return false;
}

bool AgentRegistry::IsLiveAgent(const PeerIdentity& who, const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it != agents_.end() && AliveLocked(it->second) && SameIdentity(it->second.owner, who);
}

double AgentRegistry::ClockOffset(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) return 0;
  double best_rtt = 1e9, offset = 0;
  for (const auto& [rtt, off] : it->second.samples) {
    if (rtt < best_rtt) best_rtt = rtt, offset = off;
  }
  return offset;
}

v1::NodeSnapshot AgentRegistry::Snapshot(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? v1::NodeSnapshot() : it->second.node;
}

double AgentRegistry::LoadAverage1m(const std::string& agent_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? -1 : it->second.load_avg_1m;
}

std::string DescribeSelector(const experiment::NodeSelector& sel) {
  return experiment::DescribeNodeSelector(sel);
}

Result<std::vector<std::string>> AgentRegistry::Select(const experiment::NodeSelector& sel,
                                                       SelectScope scope) const {
  using K = experiment::NodeSelector::Kind;
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [id, e] : agents_) {
    if (!AliveLocked(e)) continue;
    if (scope.only && !scope.only->count(id)) continue;
    if (experiment::NodeSelectorMatches(sel, id, e.info.labels())) out.push_back(id);
  }
  if (sel.kind == K::kCount) {
    if (static_cast<int>(out.size()) < sel.count) {
      return FailedPrecondition("node selector '" + DescribeSelector(sel) + "' needs " +
                                std::to_string(sel.count) + " live agents, " +
                                std::to_string(out.size()) + " are up");
    }
    if (scope.avoid) {
      std::stable_partition(out.begin(), out.end(),
                            [&](const std::string& id) { return !scope.avoid->count(id); });
    }
    out.resize(sel.count);
  }
  if (out.empty()) {
    return FailedPrecondition("node selector '" + DescribeSelector(sel) +
                              "' matched no live agent (" + std::to_string(agents_.size()) +
                              " registered)");
  }
  return out;
}

}  // namespace codl::controller
