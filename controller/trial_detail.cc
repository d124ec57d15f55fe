#include "controller/trial_detail.h"

#include <algorithm>
#include <cstdio>

#include "controller/runner_wire.h"
#include "controller/workload_trial.h"
#include "lib/analysis/trial_metric.h"
#include "lib/common/statistics.h"
#include "lib/common/units.h"
#include "lib/rpc/records_proto.h"

namespace codl::controller::trial_detail {

using runner::Nanos;

void CopyVictim(const v1::RunVictimReply& victim, TrialRecord* t) {
  t->exit_code = victim.exit_code();
  t->wall_s = victim.wall_s();
  t->victim_cpu_s = victim.cpu_s();
  t->victim_effective_cpus = victim.effective_cpus();
  t->value_s = victim.metric();
  t->stderr_tail = victim.stderr_tail();
  for (const auto& [k, v] : victim.phase_medians()) t->phase_medians[k] = v;
  t->phase_order.assign(victim.phase_order().begin(), victim.phase_order().end());
  for (const auto& s : victim.steps()) t->steps.push_back(rpc::FromProto(s));
  t->trace_zlib = victim.trace_zlib();
  t->trace_raw_bytes = victim.trace_raw_bytes();
  t->trace_error = victim.trace_error();
  if (victim.cache_measured()) {
    // From the agent: kept consistent whatever it sent (0 <= resident <= total).
    t->cache_total_bytes = std::max<int64_t>(0, victim.cache_total_bytes());
    t->cache_resident_bytes =
        std::clamp<int64_t>(victim.cache_resident_bytes(), 0, t->cache_total_bytes);
  }
  if (victim.has_telemetry()) {
    NodeTelemetry n = rpc::FromProto(victim.telemetry());
    n.node = t->victim_node;  // the agent does not name itself: the controller knows it
    t->node_telemetry.insert(t->node_telemetry.begin(), std::move(n));
  }
}

std::vector<FlagReason> MissedTargets(const std::vector<AntagonistResult>& antagonists) {
  std::vector<FlagReason> missed;
  for (const auto& a : antagonists) {
    if (a.reached_target) continue;
    // In the injector's human unit: "membw reached 4.00 GiB/s of target 4.70 GiB/s (85%)".
    std::string detail = a.name + " reached " + FormatRate(a.achieved_rate, a.unit) +
                         " of target " + FormatRate(a.target_rate, a.unit);
    if (a.target_rate > 0) {
      char pct[32];
      snprintf(pct, sizeof pct, " (%.0f%%)", 100 * a.achieved_rate / a.target_rate);
      detail += pct;
    }
    missed.push_back({FlagCode::kMissedTarget, detail});
  }
  return missed;
}

void Classify(bool cancelled, const std::string& error, FailureKind error_kind,
              const v1::RunVictimReply* victim, TrialRecord* t) {
  if (cancelled) {
    t->state = TrialState::kCancelled;
    t->error = "cancelled";
    t->failure = FailureKind::kCancelled;
  } else if (!error.empty()) {
    t->state = TrialState::kFailed;
    t->error = error;
    t->failure = error_kind;
  } else if (!victim || !victim->ok()) {
    t->state = TrialState::kFailed;
    t->error = victim ? victim->error() : "";
    t->failure = victim && std::string_view(victim->error()).substr(0, kVictimNotStarted.size()) ==
                               kVictimNotStarted
                     ? FailureKind::kVictimStart
                     : FailureKind::kVictim;
  } else {
    t->flag_reasons = MissedTargets(t->antagonists);
    t->error = JoinFlagReasons(t->flag_reasons);
    t->state = t->flag_reasons.empty() ? TrialState::kDone : TrialState::kFlagged;
  }
}

void FlagUnjudgeable(const experiment::ExperimentSpec& spec, const std::string& not_settled,
                     const std::vector<FlagReason>& neighbour_flags,
                     const std::vector<const Instance*>& instances, TrialRecord* t) {
  if (t->state != TrialState::kDone && t->state != TrialState::kFlagged) return;
  std::vector<FlagReason> reasons;
  // A value that cannot be a step time first: no figure of this trial means anything then.
  if (std::string wrong = experiment::MetricLooksWrong(*t, spec.victim.progress);
      !wrong.empty() && !t->solo)
    reasons.push_back({FlagCode::kMetricLooksWrong, "metric looks wrong: " + wrong});
  if (!not_settled.empty()) reasons.push_back({FlagCode::kDidNotSettle, not_settled});
  reasons.insert(reasons.end(), neighbour_flags.begin(), neighbour_flags.end());
  // The missed targets, if any.
  reasons.insert(reasons.end(), t->flag_reasons.begin(), t->flag_reasons.end());
  // By index: each instance's result has moved into t->antagonists.
  for (size_t i = 0; i < instances.size(); ++i) {
    const Instance& r = *instances[i];
    // `max` has no target to hold, so there is nothing to judge (and it is never flagged).
    if (!r.collected || r.max) continue;
    const std::string& name = t->antagonists[i].name;
    std::string s = TooShortReason(name, r.window_samples, spec.min_antagonist_samples);
    if (!s.empty()) {
      reasons.push_back({FlagCode::kTooFewSamples, s});
      break;  // one instance says it; the others were sampled at the same rate
    }
  }
  if (reasons.empty()) return;
  t->state = TrialState::kFlagged;
  t->flag_reasons = std::move(reasons);
  t->error = JoinFlagReasons(t->flag_reasons);
}

void AddSamples(const v1::StopAntagonistReply& reply, const VictimWindow& window, int64_t offset_ns,
                Instance* r) {
  r->window_samples = 0;
  std::vector<double> in_window;
  for (const auto& s : reply.samples()) {
    RateSample rs;
    const int64_t abs_ctrl = r->started_agent_ns + Nanos(s.t_s()) - offset_ns;
    rs.t_s = (abs_ctrl - window.start_ctrl_ns) / 1e9;
    rs.achieved = s.achieved();
    rs.target = s.target();
    rs.steps = s.steps();
    r->result.samples.push_back(rs);
    // Each sample covers the interval that ends at its time stamp.
    if (window.ran && rs.t_s > 0 && rs.t_s <= window.wall_s + 0.25)
      in_window.push_back(rs.achieved);
  }
  r->window_samples = static_cast<int>(in_window.size());
  if (in_window.empty()) {
    r->result.achieved_rate = reply.achieved_rate();
    r->result.achieved_cov = reply.cov();
    return;
  }
  r->result.achieved_rate = Mean(in_window);
  r->result.achieved_cov = CoefficientOfVariationOrZero(in_window);
}

std::optional<std::string> CollectWorkload(const v1::StopAntagonistReply& reply,
                                           const experiment::WorkloadSpec& w,
                                           const VictimWindow& window, bool solo, Instance* r,
                                           std::vector<FlagReason>* neighbour_flags) {
  std::optional<std::string> error;
  const workload::Figure f = workload::InWindow(r->result.samples, window.wall_s, w.throughput());
  r->result.achieved_rate = f.value;
  r->result.achieved_cov = f.cov;
  r->result.unit = workload::Unit(w);
  r->window_samples = f.samples;
  if (reply.ended_early() && window.ran) {
    neighbour_flags->push_back(
        {FlagCode::kNeighbourEnded, workload::EndedEarlyReason(r->result.name, r->node, solo,
                                                               reply.exit_code(), reply.error())});
  } else if (!reply.error().empty()) {
    error = r->result.name + ": " + reply.error();
  }
  if (window.ran && f.steps == 0 && !reply.ended_early()) {
    neighbour_flags->push_back(
        {FlagCode::kTooFewSamples, workload::NoStepsReason(r->result.name, r->node, solo)});
  }
  return error;
}

void ClassifySolo(bool cancelled, bool ran, const std::string& error, FailureKind error_kind,
                  TrialRecord* t) {
  if (cancelled || !ran) {
    t->state = cancelled ? TrialState::kCancelled : TrialState::kFailed;
    t->error = cancelled ? "cancelled" : error.empty() ? "the solo run did not start" : error;
    t->failure = cancelled       ? FailureKind::kCancelled
                 : error.empty() ? FailureKind::kAntagonistStart
                                 : error_kind;
  } else if (!error.empty()) {
    t->state = TrialState::kFailed;
    t->error = error;
    t->failure = error_kind;
  } else {
    t->state = TrialState::kDone;
  }
}

std::string SettleProblem(const Result<v1::GetAntagonistReply>& g) {
  if (!g.ok()) return g.error();
  if (!g->error().empty()) return g->error();
  if (!g->running()) return "antagonist exited early";
  return "";
}

}  // namespace codl::controller::trial_detail
