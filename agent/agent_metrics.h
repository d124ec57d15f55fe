// AgentMetrics: the agent's Prometheus metrics on --metrics-listen (prefix codl_agent_, base
// units in the names, _total counters; every metric is listed in docs/metrics.md). Refreshed by
// the agent's watchdog once a second.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "lib/common/result.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace codl::agent {

class AgentMetrics {
 public:
  AgentMetrics();
  ~AgentMetrics();
  Status Serve(const std::string& listen);

  struct Snapshot {
    int running = 0;
    double controller_silence_s = 0;
    int64_t started = 0;
    int64_t lease_expirations = 0;
    int64_t victims_ok = 0;
    int64_t victims_failed = 0;
    std::map<std::string, std::pair<double, std::string>> achieved_by_injector;  // rate, unit
    std::map<std::string, int> connections_by_role;  // open unix-socket connections
  };
  void Update(const Snapshot& s);

  // What /metrics serves right now (tests).
  std::string Exposition() const;

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  Snapshot last_;
  std::map<std::string, std::string> achieved_unit_;  // injector -> unit of its live series
};

}  // namespace codl::agent
