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

// When one agent's RegisterAgent was sent, or succeeded.
struct RegisterEvent {
  int agent;
  int64_t unix_ns;
};

struct Stats {
  std::atomic<int64_t> registrations{0}, register_failures{0};
  std::atomic<int64_t> heartbeats_ok{0}, heartbeats_failed{0}, reregisters{0};
  std::atomic<int64_t> starts{0}, stops{0}, gets{0}, victims{0}, misrouted{0};
  std::atomic<int64_t> streams{0}, telemetry_events{0}, estimates{0};
  std::mutex mu;
  std::vector<double> rtts_s;  // heartbeat round trips (client-side, minus server time)
  std::vector<StartRecord> start_records;
  // Every registration attempt and success (bounded): a storm's duration is read from them
  // (bench.py), from the first attempt to the last agent's success.
  std::vector<RegisterEvent> register_attempts, registered;

  static constexpr size_t kMaxRegisterEvents = 200'000;
  void RecordRegisterAttempt(int agent, int64_t unix_ns) {
    std::lock_guard<std::mutex> l(mu);
    if (register_attempts.size() < kMaxRegisterEvents)
      register_attempts.push_back({agent, unix_ns});
  }
  void RecordRegistration(int agent, int64_t unix_ns) {
    std::lock_guard<std::mutex> l(mu);
    if (registered.size() < kMaxRegisterEvents) registered.push_back({agent, unix_ns});
  }
};

// The counters, heartbeat round-trip percentiles, every start record (agent ids from
// `agent_ids`, indexed by StartRecord::agent) and this process's CPU time.
nlohmann::json StatsReport(Stats& stats, const std::vector<std::string>& agent_ids);

}  // namespace codl::bench
