#include "controller/agent_registry.h"

#include <spdlog/spdlog.h>

namespace codl::controller {

AgentRegistry::AgentRegistry(const Clock* clock, AgentClientFactory factory, double dead_after_s)
    : clock_(clock), factory_(std::move(factory)), dead_after_s_(dead_after_s) {}

Status AgentRegistry::Register(const v1::AgentInfo& info, const v1::NodeSnapshot& node) {
  if (info.agent_id().empty()) return Err("agent id is empty");
  if (info.address().empty()) return Err("agent " + info.agent_id() + " sent no address");
  auto client = factory_(info.agent_id(), info.address());
  if (!client)
    return Err("cannot create a client for agent " + info.agent_id() + " at " + info.address());
  std::lock_guard<std::mutex> l(mu_);
  Entry& e = agents_[info.agent_id()];
  bool known = e.client != nullptr;
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
                              int running, double load_avg_1m) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) return false;
  Entry& e = it->second;
  e.last_heartbeat_s = clock_->MonotonicSeconds();
  e.info.set_last_heartbeat_unix_ms(clock_->UnixNanos() / 1'000'000);
  e.info.set_running_antagonists(running);
  if (load_avg_1m >= 0) e.load_avg_1m = load_avg_1m;
  if (rtt_s > 0) {
    e.samples.emplace_back(rtt_s, offset_s);
    if (e.samples.size() > 16) e.samples.pop_front();
  }
  return true;
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
  using K = experiment::NodeSelector::Kind;
  std::string s;
  switch (sel.kind) {
    case K::kAll: return "all";
    case K::kCount: return "count: " + std::to_string(sel.count);
    case K::kHosts:
      for (const auto& h : sel.hosts) s += (s.empty() ? "" : ", ") + h;
      return "hosts: [" + s + "]";
    case K::kLabels:
      for (const auto& [k, v] : sel.labels) s += (s.empty() ? "" : ", ") + k + ": " + v;
      return "labels: {" + s + "}";
  }
  return "?";
}

Result<std::vector<std::string>> AgentRegistry::Select(const experiment::NodeSelector& sel) const {
  using K = experiment::NodeSelector::Kind;
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [id, e] : agents_) {
    if (!AliveLocked(e)) continue;
    bool match = true;
    if (sel.kind == K::kLabels) {
      for (const auto& [k, v] : sel.labels) {
        auto it = e.info.labels().find(k);
        if (it == e.info.labels().end() || it->second != v) match = false;
      }
    } else if (sel.kind == K::kHosts) {
      match = false;
      for (const auto& h : sel.hosts) {
        auto hn = e.info.labels().find("hostname");
        if (h == id || (hn != e.info.labels().end() && hn->second == h)) match = true;
      }
    }
    if (match) out.push_back(id);
  }
  if (sel.kind == K::kCount) {
    if (static_cast<int>(out.size()) < sel.count) {
      return Err("node selector '" + DescribeSelector(sel) + "' needs " +
                 std::to_string(sel.count) + " live agents, " + std::to_string(out.size()) +
                 " are up");
    }
    out.resize(sel.count);
  }
  if (out.empty()) {
    return Err("node selector '" + DescribeSelector(sel) + "' matched no live agent (" +
               std::to_string(agents_.size()) + " registered)");
  }
  return out;
}

}  // namespace codl::controller
