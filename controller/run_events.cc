#include "controller/run_events.h"

#include <cmath>
#include <cstdio>

#include "lib/analysis/trial_metric.h"
#include "lib/common/units.h"
#include "lib/rpc/records_proto.h"

namespace codl::controller::events {
namespace {

// "5 s", "1.5 s": seconds as a person writes them.
std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

v1::ExperimentEvent WatchStarted() {
  v1::ExperimentEvent ev;
  ev.mutable_watch_started();
  ev.set_message("watching");
  return ev;
}

v1::ExperimentEvent ExperimentChanged(ExperimentState state, const std::string& detail) {
  v1::ExperimentEvent ev;
  auto* e = ev.mutable_experiment();
  e->set_state(rpc::ToProto(state));
  if (state == ExperimentState::kRunning) {
    ev.set_message("experiment started" + (detail.empty() ? "" : ": " + detail));
  } else {
    e->set_error(detail);
    ev.set_message(std::string("experiment ") + ToString(state) +
                   (detail.empty() ? "" : ": " + detail));
  }
  return ev;
}

v1::ExperimentEvent TrialStarted(int index, int total, const std::string& pairing) {
  v1::ExperimentEvent ev;
  auto* t = ev.mutable_trial_started();
  t->set_index(index);
  t->set_total(total);
  t->set_pairing(pairing);
  ev.set_message("trial " + std::to_string(index + 1) + "/" + std::to_string(total) + " " +
                 pairing + " started");
  return ev;
}

v1::ExperimentEvent TrialFinished(const TrialRecord& t, int total,
                                  const experiment::TrialMetric& metric) {
  v1::ExperimentEvent ev;
  v1::TrialFinished* f;
  switch (t.state) {
    case TrialState::kFlagged: f = ev.mutable_trial_flagged(); break;
    case TrialState::kFailed: f = ev.mutable_trial_failed(); break;
    case TrialState::kCancelled: f = ev.mutable_trial_cancelled(); break;
    default: f = ev.mutable_trial_done();
  }
  f->set_index(t.index);
  f->set_total(total);
  f->set_pairing(t.pairing);
  f->set_state(rpc::ToProto(t.state));
  f->set_metric(t.value_s);
  if (t.state != TrialState::kFlagged) f->set_error(t.error);
  for (const auto& r : t.flag_reasons) *f->add_flag_reasons() = rpc::ToProto(r);
  char buf[512];
  if (t.state == TrialState::kFailed) {
    // No metric: a failed trial has none. Why, with the victim's last stderr line.
    std::snprintf(buf, sizeof buf, "trial %d/%d %s: failed — %s", t.index + 1, total,
                  t.pairing.c_str(), FailureWithStderr(t.error, t.stderr_tail).c_str());
  } else {
    const double value = experiment::TrialMetricValue(t, metric);
    std::string shown = "no " + metric.Name() + " measured";
    if (std::isfinite(value)) {
      char v[64];
      std::snprintf(v, sizeof v, "%.4g %s", value, metric.Unit().c_str());
      shown = metric.Name() + " " + (metric.Unit() == "s" ? FormatDuration(value) : v);
    }
    std::snprintf(buf, sizeof buf, "trial %d/%d %s: %s, %s%s%s", t.index + 1, total,
                  t.pairing.c_str(), ToString(t.state), shown.c_str(), t.error.empty() ? "" : " — ",
                  t.error.c_str());
  }
  ev.set_message(buf);
  return ev;
}

v1::ExperimentEvent Calibrating(const std::string& antagonist, const std::string& injector,
                                const std::string& node, double duration_s,
                                const std::string& reason) {
  v1::ExperimentEvent ev;
  auto* c = ev.mutable_calibrating();
  c->set_antagonist(antagonist);
  c->set_injector(injector);
  c->set_node(node);
  c->set_duration_s(duration_s);
  c->set_reason(reason);
  ev.set_message("calibrating " + antagonist + " (" + injector + ") on " + node + " for " +
                 Seconds(duration_s) + (reason.empty() ? "" : " (" + reason + ")"));
  return ev;
}

v1::ExperimentEvent WarmUpStarted(int run, int runs, const std::string& nodes) {
  v1::ExperimentEvent ev;
  auto* w = ev.mutable_warm_up();
  w->set_run(run);
  w->set_runs(runs);
  ev.set_message("warm-up run " + std::to_string(run) + "/" + std::to_string(runs) + " on " +
                 nodes + " (antagonists off; discarded)");
  return ev;
}

v1::ExperimentEvent WarmUpFinished(int run, int runs, double wall_s) {
  v1::ExperimentEvent ev;
  auto* w = ev.mutable_warm_up();
  w->set_run(run);
  w->set_runs(runs);
  w->set_finished(true);
  w->set_wall_s(wall_s);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f s", wall_s);
  ev.set_message("warm-up run " + std::to_string(run) + " done in " + buf);
  return ev;
}

v1::ExperimentEvent DatasetChanged(int64_t generated, int64_t total) {
  v1::ExperimentEvent ev;
  auto* d = ev.mutable_dataset();
  d->set_generated(generated);
  d->set_total(total);
  const std::string n = std::to_string(total);
  ev.set_message(generated >= total ? "dataset: the victim generated " + n + " samples"
                                    : "dataset: the victim is generating " + n + " samples");
  return ev;
}

v1::ExperimentEvent Note(v1::Note::Severity severity, const std::string& text) {
  v1::ExperimentEvent ev;
  auto* n = ev.mutable_note();
  n->set_severity(severity);
  n->set_text(text);
  ev.set_message(text);
  return ev;
}

}  // namespace codl::controller::events
