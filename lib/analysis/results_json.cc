// FormatJson for ExperimentResults (`codlctl results -o json`). Field names are documented in
// docs/results.md; change them only together with that page. The table and CSV are in
// results_format.cc.
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "lib/analysis/interaction_format.h"
#include "lib/analysis/results.h"
#include "lib/common/gpu_clock_reasons.h"
#include "lib/common/units.h"
#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

using Json = nlohmann::ordered_json;  // keeps fields in the documented order

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(); }

Json RanksJson(const RankSpread& s) {
  if (s.ranks.empty()) return Json();
  Json j;
  j["ranks"] = Json::array();
  for (const RankFigure& f : s.ranks) {
    j["ranks"].push_back({{"rank", f.rank},
                          {"node", f.node},
                          {"trials", f.trials},
                          {"busy_median_s", Num(f.busy_median_s)},
                          {"step_median_s", Num(f.step_median_s)}});
  }
  j["median_busy_s"] = Num(s.median_busy_s);
  j["spread"] = Num(s.spread);
  j["slowest_rank"] = s.SlowestNamed() ? Json(s.slowest) : Json();
  j["slowest_behind"] = s.slowest >= 0 ? Num(s.behind) : Json();
  return j;
}

Json PhasesJson(const std::vector<PhaseSlowdown>& phases) {
  Json out = Json::array();
  for (const auto& ph : phases) {
    out.push_back({{"phase", ph.phase},
                   {"median_s", Num(ph.median_s)},
                   {"slowdown", Num(ph.slowdown)},
                   {"on_path", ph.on_path},
                   {"feeds", ph.feeds.empty() ? Json() : Json(ph.feeds)},
                   {"mean_s", Num(ph.mean_s)},
                   {"baseline_mean_s", Num(ph.baseline_mean_s)},
                   {"near_zero", ph.near_zero},
                   {"mean_slowdown", Num(ph.mean_slowdown)},
                   {"added_s", Num(ph.added_s)},
                   {"added_ci_low", Num(ph.added_ci_low)},
                   {"added_ci_high", Num(ph.added_ci_high)},
                   {"significant", ph.significant}});
  }
  return out;
}

Json NeighboursJson(const std::vector<NeighbourSummary>& neighbours) {
  Json out = Json::array();
  for (const NeighbourSummary& n : neighbours) {
    out.push_back({{"name", n.name},
                   {"unit", n.unit},
                   {"n", n.n},
                   {"n_solo", n.n_solo},
                   {"value", Num(n.value)},
                   {"solo_value", Num(n.solo_value)},
                   {"slowdown", Num(n.slowdown)},
                   {"ci_low", Num(n.ci_low)},
                   {"ci_high", Num(n.ci_high)},
                   {"p_value", Num(n.p_value)},
                   {"victim_slowdown", Num(n.victim_slowdown)},
                   {"combined_throughput", Num(n.combined_throughput)}});
  }
  return out;
}

Json TelemetryJson(const TelemetrySummary& tm) {
  Json out = {{"n", tm.n},
              {"psi_cpu_some", Num(tm.psi_cpu_some)},
              {"psi_io_some", Num(tm.psi_io_some)},
              {"psi_memory_some", Num(tm.psi_memory_some)},
              {"disk_read_bytes_per_s", Num(tm.disk_read_bytes_per_s)},
              {"disk_write_bytes_per_s", Num(tm.disk_write_bytes_per_s)},
              {"net_bytes_per_s", Num(tm.net_bytes_per_s)},
              {"net_rx_bytes_per_s", Num(tm.net_rx_bytes_per_s)},
              {"net_tx_bytes_per_s", Num(tm.net_tx_bytes_per_s)},
              {"mem_available_min_bytes", Num(tm.mem_available_min_bytes)},
              {"membw_bytes_per_s", Num(tm.membw_bytes_per_s)},
              {"membw_note", tm.membw_note}};
  out["gpu_note"] = tm.gpu_note;
  out["gpus"] = Json::array();
  for (const GpuTelemetrySummary& g : tm.gpus) {
    out["gpus"].push_back(
        {{"index", g.index},
         {"name", g.name},
         {"n", g.n},
         {"util_mean", Num(g.util_mean)},
         {"util_max", Num(g.util_max)},
         {"mem_used_max_bytes", Num(g.mem_used_max_bytes)},
         {"pcie_tx_bytes_per_s", Num(g.pcie_tx_bytes_per_s)},
         {"pcie_rx_bytes_per_s", Num(g.pcie_rx_bytes_per_s)},
         {"nvlink_tx_bytes_per_s", Num(g.nvlink_tx_bytes_per_s)},
         {"nvlink_rx_bytes_per_s", Num(g.nvlink_rx_bytes_per_s)},
         {"sm_clock_min_mhz", Num(g.sm_clock_min_mhz)},
         {"sm_clock_mean_mhz", Num(g.sm_clock_mean_mhz)},
         {"mem_clock_min_mhz", Num(g.mem_clock_min_mhz)},
         {"mem_clock_mean_mhz", Num(g.mem_clock_mean_mhz)},
         {"clock_reasons",
          g.clock_reasons >= 0 ? Json(GpuClockReasonsText(g.clock_reasons)) : Json()}});
  }
  return out;
}

Json AntagonistsJson(const std::vector<AntagonistSummary>& antagonists) {
  Json out = Json::array();
  for (const auto& a : antagonists) {
    out.push_back({{"name", a.name},
                   {"injector", a.injector},
                   {"intensity", a.intensity},
                   {"intensity_kind", IntensityKind(a)},
                   {"level", IntensityKind(a) == "level" ? Num(a.level) : Json()},
                   {"target_rate", Num(a.target_rate)},
                   {"achieved_rate", Num(a.achieved_rate)},
                   {"achieved_cov", Num(a.achieved_cov)},
                   {"unit", a.unit},
                   {"n_missed_target", a.n_missed_target},
                   {"max", a.max},
                   {"cores", Num(a.cores)},
                   {"cpus", a.cpus}});
  }
  return out;
}

// One pairing, its fields in the documented order (docs/results.md).
Json PairingJson(const PairingSummary& p) {
  Json pj;
  pj["pairing"] = p.pairing;
  pj["baseline"] = p.baseline;
  pj["n"] = p.n;
  pj["n_flagged"] = p.n_flagged;
  pj["n_failed"] = p.n_failed;
  pj["n_not_run"] = p.n_not_run;
  pj["median_metric_s"] = Num(p.median_metric_s);
  pj["metric_cov"] = Num(p.cov);
  pj["victim_cores"] = Num(p.victim_cores);
  pj["p_holm"] = Num(p.p_holm);
  pj["q_bh"] = Num(p.q_bh);
  pj["p_min"] = Num(p.p_min);
  pj["ci_small_n"] = p.ci_small_n;
  pj["ci_exact"] = p.ci_exact;
  pj["victim_cpus"] = p.victim_cpus;
  pj["slowdown"] = Num(p.slowdown);
  pj["ci_low"] = Num(p.ci_low);
  pj["ci_high"] = Num(p.ci_high);
  pj["p_value"] = Num(p.p_value);
  pj["p_method"] = p.p_method == MannWhitneyMethod::kNone ? Json() : Json(ToString(p.p_method));
  pj["metric_median"] = Num(p.metric_median);
  pj["n_all"] = p.n_all;
  pj["flag_rate"] = Num(p.flag_rate);
  pj["slowdown_all"] = Num(p.slowdown_all);
  pj["ci_all_low"] = Num(p.ci_all_low);
  pj["ci_all_high"] = Num(p.ci_all_high);
  pj["mde"] = Num(p.mde);
  pj["phases"] = PhasesJson(p.phases);
  const StepAttribution& at = p.attribution;
  pj["attribution"] = {{"step_s", Num(at.step_s)},
                       {"baseline_step_s", Num(at.baseline_step_s)},
                       {"added_s", Num(at.added_s)},
                       {"ci_low", Num(at.ci_low)},
                       {"ci_high", Num(at.ci_high)},
                       {"explained_s", Num(at.explained_s)},
                       {"unexplained_s", Num(at.unexplained_s)}};
  pj["ranks"] = RanksJson(p.ranks);
  pj["confounds"] = p.confounds;
  pj["neighbours"] = NeighboursJson(p.neighbours);
  pj["cache_total_bytes"] = Num(p.cache_total_bytes);
  pj["cache_resident_fraction"] = Num(p.cache_resident_fraction);
  if (p.telemetry.n > 0) pj["telemetry"] = TelemetryJson(p.telemetry);
  pj["antagonists"] = AntagonistsJson(p.antagonists);
  return pj;
}

Json ToleranceJson(const std::vector<ToleranceResult>& tolerance) {
  Json out = Json::array();
  for (const ToleranceResult& t : tolerance) {
    Json probes = Json::array();
    for (const ToleranceProbe& p : t.probes) {
      probes.push_back({{"level", p.level},
                        {"n", p.n},
                        {"slowdown", Num(p.slowdown)},
                        {"ci_low", Num(p.ci_low)},
                        {"ci_high", Num(p.ci_high)},
                        {"verdict", p.verdict}});
    }
    out.push_back({{"name", t.name},
                   {"slowdown", t.threshold},
                   {"resolution", t.resolution},
                   {"max_trials", t.max_trials},
                   {"tolerated_level", t.tolerated_level},
                   {"breaks_level", Num(t.breaks_level)},
                   {"tolerates_max", t.tolerates_max},
                   {"trials", t.trials},
                   {"stop_reason", t.stop_reason},
                   {"detail", t.detail},
                   {"probes", probes}});
  }
  return out;
}

Json PressureJson(const std::vector<PressureSummary>& pressure) {
  Json out = Json::array();
  for (const PressureSummary& p : pressure) {
    out.push_back({{"workload", p.workload},
                   {"antagonist", p.antagonist},
                   {"injector", p.injector},
                   {"unit", p.unit},
                   {"intensity", p.intensity},
                   {"pressure", Num(p.pressure)},
                   {"ci_low", Num(p.ci_low)},
                   {"ci_high", Num(p.ci_high)},
                   {"n", p.n},
                   {"n_alone", p.n_alone}});
  }
  return out;
}

Json FailedTrialsJson(const std::vector<FailedTrial>& failed) {
  Json out = Json::array();
  for (const FailedTrial& f : failed) {
    out.push_back({{"trial", f.index + 1},  // 1-based, as everywhere shown
                   {"trial_index", f.index},
                   {"pairing", f.pairing},
                   {"reason", f.reason},
                   {"hint", f.hint.empty() ? Json() : Json(f.hint)}});
  }
  return out;
}

}  // namespace

std::string FormatJson(const ExperimentResults& r) {
  Json j;
  j["experiment_id"] = r.experiment_id;
  j["name"] = r.name;
  j["seed"] = r.seed;
  j["bootstrap_resamples"] = r.bootstrap_resamples;
  j["confidence"] = r.confidence;
  j["metric"] = r.metric;
  j["metric_unit"] = r.metric_unit;
  j["noisy_cov_threshold"] = r.noisy_cov_threshold;
  j["baseline_cov"] = Num(r.baseline_cov);
  j["noisy_baseline"] = r.noisy_baseline;
  j["created_unix_ms"] = r.created_unix_ms;
  j["finished_unix_ms"] = r.finished_unix_ms;
  j["yaml"] = r.yaml;
  // Stored by the controller as JSON text; a damaged one is shown as null, not a failure.
  Json prov = Json::parse(r.provenance_json, nullptr, false);
  j["provenance"] = prov.is_discarded() ? Json() : prov;
  j["stop_reason"] = r.stop_reason;
  j["submitter"] = r.submitter.empty() ? Json() : Json(r.submitter);
  j["state"] = r.state;
  j["complete"] = r.state == "done";
  j["trials_planned"] = r.trials_planned;
  j["trials_committed"] = r.trials_committed;
  j["resumptions"] = r.resumptions;
  j["trials_retried"] = r.trials_retried;
  j["retried_for"] = r.retried_for;
  j["gpu_device"] = r.gpu_device.empty() ? Json() : Json(r.gpu_device);
  j["pairings"] = Json::array();
  for (const auto& p : r.pairings) j["pairings"].push_back(PairingJson(p));
  j["interactions"] = InteractionsJson(r.interactions);
  j["tolerance"] = ToleranceJson(r.tolerance);
  j["pressure"] = PressureJson(r.pressure);
  j["crosstalk"] = r.crosstalk ? Json::parse(FormatCrosstalkJson(r.crosstalk_matrix)) : Json();
  j["n_metric_looks_wrong"] = r.n_metric_looks_wrong;
  j["metric_looks_wrong"] = r.metric_looks_wrong.empty() ? Json() : Json(r.metric_looks_wrong);
  j["failed_trials"] = FailedTrialsJson(r.failed_trials);
  return j.dump(2) + "\n";
}

}  // namespace codl::experiment
