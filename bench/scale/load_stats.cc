#include "bench/scale/load_stats.h"

#include <sys/resource.h>

#include <algorithm>

namespace codl::bench {

nlohmann::json StatsReport(Stats& stats, const std::vector<std::string>& agent_ids) {
  nlohmann::json j;
  j["registrations"] = stats.registrations.load();
  j["register_failures"] = stats.register_failures.load();
  j["heartbeats_ok"] = stats.heartbeats_ok.load();
  j["heartbeats_failed"] = stats.heartbeats_failed.load();
  j["reregisters"] = stats.reregisters.load();
  j["starts"] = stats.starts.load();
  j["gets"] = stats.gets.load();
  j["stops"] = stats.stops.load();
  j["victims"] = stats.victims.load();
  j["misrouted"] = stats.misrouted.load();
  j["streams"] = stats.streams.load();
  j["telemetry_events"] = stats.telemetry_events.load();
  j["estimates"] = stats.estimates.load();
  std::lock_guard<std::mutex> l(stats.mu);
  std::vector<double> r = stats.rtts_s;
  std::sort(r.begin(), r.end());
  auto pct = [&](double p) {
    return r.empty() ? 0.0 : r[std::min(r.size() - 1, static_cast<size_t>(p * r.size()))];
  };
  j["heartbeat_rtt_ms"] = {{"p50", pct(0.5) * 1e3}, {"p99", pct(0.99) * 1e3}, {"n", r.size()}};
  j["start_records"] = nlohmann::json::array();
  for (const auto& s : stats.start_records) {
    j["start_records"].push_back({{"agent", agent_ids[s.agent]},
                                  {"antagonist_id", s.antagonist_id},
                                  {"arrival_ns", s.arrival_ns},
                                  {"start_at_ns", s.start_at_ns},
                                  {"offset_s", s.offset_s},
                                  {"replied_ns", s.replied_ns}});
  }
  // [agent index, unix ns] pairs, compact: 10,000 agents re-registering make 20,000 of them.
  auto events = [](const std::vector<RegisterEvent>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : v) a.push_back({e.agent, e.unix_ns});
    return a;
  };
  j["register_attempts_ns"] = events(stats.register_attempts);
  j["registered_ns"] = events(stats.registered);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  j["load_tool_cpu_s"] = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                         ru.ru_stime.tv_usec / 1e6;
  return j;
}

}  // namespace codl::bench
