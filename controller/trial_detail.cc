#include "controller/trial_detail.h"

#include <algorithm>
#include <cstdio>

#include "lib/common/units.h"
#include "lib/rpc/records_proto.h"

namespace codl::controller::trial_detail {

void CopyVictim(const v1::RunVictimReply& victim, TrialRecord* t) {
  t->exit_code = victim.exit_code();
  t->wall_s = victim.wall_s();
  t->victim_cpu_s = victim.cpu_s();
  t->victim_effective_cpus = victim.effective_cpus();
  t->metric = victim.metric();
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

void Classify(bool cancelled, const std::string& error, const v1::RunVictimReply* victim,
              TrialRecord* t) {
  if (cancelled) {
    t->state = TrialState::kCancelled;
    t->error = "cancelled";
  } else if (!error.empty()) {
    t->state = TrialState::kFailed;
    t->error = error;
  } else if (!victim || !victim->ok()) {
    t->state = TrialState::kFailed;
    t->error = victim ? victim->error() : "";
  } else {
    t->flag_reasons = MissedTargets(t->antagonists);
    t->error = JoinFlagReasons(t->flag_reasons);
    t->state = t->flag_reasons.empty() ? TrialState::kDone : TrialState::kFlagged;
  }
}

}  // namespace codl::controller::trial_detail
