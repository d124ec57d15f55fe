// The events a run publishes (codl.v1.ExperimentEvent): each with its kind, which views decide
// from, and its text for people, formatted here once. The scheduler adds the status.
#pragma once

#include <cstdint>
#include <string>

#include "codl/v1/controller.pb.h"
#include "lib/common/records.h"
#include "lib/spec/trial_metric.h"

namespace codl::controller::events {

v1::ExperimentEvent WatchStarted();
// Started (kRunning, `detail` = "12 trials") or ended (a final state, `detail` = its error).
v1::ExperimentEvent ExperimentChanged(ExperimentState state, const std::string& detail);
v1::ExperimentEvent TrialStarted(int index, int total, const std::string& pairing);
// trial_done, trial_flagged, trial_failed or trial_cancelled, by the record's state. The text
// names the experiment's per-trial metric with its value ("elapsed 1.16 s"), the figure the
// results table is made of; the proto's `metric` stays the victim's own summary.
v1::ExperimentEvent TrialFinished(const TrialRecord& t, int total,
                                  const experiment::TrialMetric& metric = {});
v1::ExperimentEvent Calibrating(const std::string& antagonist, const std::string& injector,
                                const std::string& node, double duration_s,
                                const std::string& reason);
v1::ExperimentEvent WarmUpStarted(int run, int runs, const std::string& nodes);
v1::ExperimentEvent WarmUpFinished(int run, int runs, double wall_s);
// The victim's dataset generation started (generated < total) or finished.
v1::ExperimentEvent DatasetChanged(int64_t generated, int64_t total);
v1::ExperimentEvent Note(v1::Note::Severity severity, const std::string& text);

}  // namespace codl::controller::events
