// ControllerMetrics: the controller's Prometheus metrics (prometheus-cpp), served on
// --metrics-listen. Names follow Prometheus conventions: prefix codl_, base units in the name
// (never in a label), _total for counters; docs/metrics.md lists every one. Updated from the
// scheduler (trials) and a refresher (agents, experiments). Per-experiment series (antagonist
// rates, progress) are removed when the experiment ends, so dashboards show only live ones.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

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
  // `completed` of `planned` trials of `experiment_id` are finished.
  void OnTrialProgress(const std::string& experiment_id, int completed, int planned);
  void OnExperimentFinished(const std::string& experiment_id, ExperimentState state);
  void SetExperiments(int queued, int running);
  void SetAgents(int up, int down);
  // codl_controller_connections{role}: open unix-socket connections by caller role.
  void SetConnections(const std::map<std::string, int>& by_role);

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::unique_ptr<prometheus::Exposer> exposer_;

 public:
  // What /metrics serves right now (tests).
  std::string Exposition() const;
};

}  // namespace codl::controller
