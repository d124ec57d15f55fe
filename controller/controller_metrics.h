// ControllerMetrics: the controller's Prometheus metrics (prometheus-cpp), served on
// --metrics-listen. Names follow Prometheus conventions: prefix codl_, base units, _total for
// counters. Updated from the scheduler (trials) and a refresher (agents, experiments).
#pragma once

#include <memory>
#include <string>

#include "lib/common/records.h"
#include "lib/common/result.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace codl::controller {

class ControllerMetrics {
 public:
  ControllerMetrics();
  ~ControllerMetrics();
  // Starts the HTTP endpoint (/metrics) on "host:port".
  Status Serve(const std::string& listen);

  void OnTrialDone(const TrialRecord& trial);
  void OnExperimentFinished(ExperimentState state);
  void SetExperiments(int queued, int running);
  void SetAgents(int up, int down);

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace codl::controller
