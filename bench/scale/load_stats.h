// What codl-load-agents counts while it runs, and the JSON report (--out) made from it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace codl::bench {

// One StartAntagonist arrival (bench/run_skew_bench.sh reads these).
struct StartRecord {
  int agent;
  std::string antagonist_id;
  int64_t arrival_ns;
  int64_t start_at_ns;
  double offset_s;     // the agent's own offset estimate (agent - controller) at arrival
  int64_t replied_ns;  // the reported start (started_unix_ns): when the start timer fired
};

struct Stats {
  std::atomic<int64_t> registrations{0}, register_failures{0};
  std::atomic<int64_t> heartbeats_ok{0}, heartbeats_failed{0}, reregisters{0};
  std::atomic<int64_t> starts{0}, stops{0}, gets{0}, victims{0}, misrouted{0};
  std::mutex mu;
  std::vector<double> rtts_s;  // heartbeat round trips (client-side, minus server time)
  std::vector<StartRecord> start_records;
};

// The counters, heartbeat round-trip percentiles, every start record (agent ids from
// `agent_ids`, indexed by StartRecord::agent) and this process's CPU time.
nlohmann::json StatsReport(Stats& stats, const std::vector<std::string>& agent_ids);

}  // namespace codl::bench
