// FormatTable / FormatCsv / FormatJson for ExperimentResults. Names are documented in
// docs/results.md; change them only together with that page.
#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lib/analysis/interaction_format.h"
#include "lib/analysis/pairing_order.h"
#include "lib/analysis/results.h"
#include "lib/analysis/tidy.h"
#include "lib/common/csv.h"
#include "lib/common/gpu_clock_reasons.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"
#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

std::string Fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Levels(const PairingSummary& p) {
  if (p.baseline) return "-";
  std::string s;
  for (const auto& a : p.antagonists) s += (s.empty() ? "" : " ") + a.name + "=" + a.intensity;
  return s;
}

// "membw 4.00 GiB/s (80% of target)"; `brief` (the narrow table): "membw 4.00 GiB/s (80%)".
std::string Achieved(const PairingSummary& p, bool brief) {
  std::string s;
  for (const auto& a : p.antagonists) {
    if (!std::isfinite(a.achieved_rate)) continue;
    if (!s.empty()) s += ", ";
    s += a.name + " " + FormatRate(a.achieved_rate, a.unit.empty() ? "bytes/s" : a.unit);
    if (a.max) {
      s += brief ? " (max)" : " (max, open loop)";
    } else if (std::isfinite(a.target_rate) && a.target_rate > 0) {
      s += " (" + Fmt("%.0f", 100 * a.achieved_rate / a.target_rate) +
           (brief ? "%)" : "% of target)");
    }
  }
  return s.empty() ? "-" : s;
}

// The narrow table's cell: one antagonist as Achieved(p, true); several by their percentage
// of target (or their rate when open loop), with the rates on a line of their own.
std::string AchievedBrief(const PairingSummary& p) {
  if (p.antagonists.size() <= 1) return Achieved(p, true);
  std::string s;
  for (const auto& a : p.antagonists) {
    if (!std::isfinite(a.achieved_rate)) continue;
    s += (s.empty() ? "" : ", ") + a.name + " ";
    if (!a.max && std::isfinite(a.target_rate) && a.target_rate > 0) {
      s += Fmt("%.0f", 100 * a.achieved_rate / a.target_rate) + "%";
    } else {
      s += FormatRate(a.achieved_rate, a.unit.empty() ? "bytes/s" : a.unit);
    }
  }
  return s.empty() ? "-" : s;
}

// "victim 0.98, membw 0.42": mean CPU cores used, beside the achieved rates, so CPU contention
// is not mistaken for the named resource. "-" where nothing was measured.
std::string Cores(const PairingSummary& p) {
  std::string s;
  if (std::isfinite(p.victim_cores)) s = "victim " + Fmt("%.2f", p.victim_cores);
  for (const auto& a : p.antagonists) {
    if (std::isfinite(a.cores)) s += (s.empty() ? "" : ", ") + a.name + " " + Fmt("%.2f", a.cores);
  }
  return s.empty() ? "-" : s;
}

std::string SlowdownCell(double slowdown, double low, double high) {
  if (!std::isfinite(slowdown)) return "-";
  std::string s = Fmt("%.2fx", slowdown);
  if (std::isfinite(low)) s += " [" + Fmt("%.2f", low) + ", " + Fmt("%.2f", high) + "]";
  return s;
}

std::string MetricCell(const ExperimentResults& r, double v) {
  if (!std::isfinite(v)) return "-";
  return r.metric_unit == "s" ? FormatDuration(v) : Fmt("%.4g", v) + " " + r.metric_unit;
}

// "1/4 (25%)": the flag rate, so the selection behind the held-target figure is visible.
std::string FlaggedCell(const PairingSummary& p) {
  if (p.baseline || p.n_all == 0) return "-";
  return std::to_string(p.n_flagged) + "/" + std::to_string(p.n_all) + " (" +
         Fmt("%.0f", 100 * p.flag_rate) + "%)";
}

std::string MetricDescription(const ExperimentResults& r) {
  if (r.metric == "elapsed") return "elapsed (time of the measured steps)";
  if (r.metric == "throughput") return "throughput (measured steps/s; slowdown = baseline / it)";
  if (r.metric == "mean" || r.metric == "median") return r.metric + " step time";
  return r.metric + " of the step times";
}

// "1.12x": the smallest slowdown these n could detect (alpha 5 %, power 80 %); "-" without one.
std::string MdeCell(const PairingSummary& p) {
  return std::isfinite(p.mde) ? Fmt("%.3gx", p.mde) : "-";
}

using Json = nlohmann::ordered_json;  // keeps fields in the documented order

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(); }

// Shortest text that reads back as the same double ("0.122", "1073741824"); "" for NaN.
std::string CsvNum(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

}  // namespace

std::string IntensityKind(const AntagonistSummary& a) {
  if (a.injector == kWorkloadInjector) return "workload";  // a real job: no intensity of its own
  if (a.max) return "max";
  return a.level > 0 ? "level" : "rate";
}

TidyTable PhaseSummaryTable(const ExperimentResults& r) {
  TidyTable t;
  t.columns = {"experiment_id", "pairing",           "baseline",  "n",       "phase",
               "median_s",      "baseline_median_s", "slowdown",  "on_path", "feeds",
               "mean_s",        "baseline_mean_s",   "near_zero", "added_s", "added_ci_low",
               "added_ci_high"};
  const PairingSummary* base = nullptr;
  for (const auto& p : r.pairings) {
    if (p.baseline) base = &p;
  }
  for (const PairingSummary* p : SortedPairings(r)) {
    for (const PhaseSlowdown& ph : p->phases) {
      double base_s = kNaN;
      if (base) {
        for (const PhaseSlowdown& b : base->phases) {
          if (b.phase == ph.phase) base_s = b.median_s;
        }
      }
      t.rows.push_back({Cell::Text(r.experiment_id), Cell::Text(p->pairing),
                        Cell::Bool(p->baseline), Cell::Int(p->n), Cell::Text(ph.phase),
                        Cell::Number(ph.median_s), Cell::Number(base_s), Cell::Number(ph.slowdown),
                        Cell::Bool(ph.on_path), Cell::Text(ph.feeds), Cell::Number(ph.mean_s),
                        Cell::Number(ph.baseline_mean_s), Cell::Bool(ph.near_zero),
                        Cell::Number(ph.added_s), Cell::Number(ph.added_ci_low),
                        Cell::Number(ph.added_ci_high)});
    }
  }
  return t;
}

// "0.0159 [0.0476]*": the raw p, the Holm-adjusted one, and * when that is below 5%.
std::string PCell(const PairingSummary& p) {
  if (!std::isfinite(p.p_value)) return "-";
  std::string s = Fmt("%.3g", p.p_value);
  if (std::isfinite(p.p_holm))
    s += " [" + Fmt("%.3g", p.p_holm) + "]" + (p.p_holm < 0.05 ? "*" : "");
  return s;
}

namespace {

// "ranks (busy: step minus comm_s): 0@a 41 ms, 1@b 78 ms; spread 62%; slowest: rank 1 (b),
// 31% behind the median rank".
std::string RanksLine(const RankSpread& s) {
  std::string line = "ranks (busy time: step minus comm_s):";
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankFigure& f = s.ranks[i];
    line += std::string(i ? ", " : " ") + std::to_string(f.rank) + "@" + TerminalSafe(f.node) +
            " " + FormatDuration(f.busy_median_s);
  }
  if (std::isfinite(s.spread)) line += "; spread " + Fmt("%.0f", s.spread * 100) + "%";
  if (s.SlowestNamed()) {
    const RankFigure& f = *std::find_if(s.ranks.begin(), s.ranks.end(),
                                        [&](const RankFigure& x) { return x.rank == s.slowest; });
    line += "; slowest: rank " + std::to_string(f.rank) + " (" + TerminalSafe(f.node) + "), " +
            Fmt("%.0f", s.behind * 100) + "% behind the median rank";
  } else if (s.slowest >= 0) {
    line +=
        "; no rank more than " + Fmt("%.0f", kSlowestRankBehind * 100) + "% behind the median rank";
  }
  return line;
}

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

// "failed trials:" with each one's reason (trials numbered from 1, as the progress shows
// them), at most kShown of them, and each distinct hint once.
std::string FailedTrialsSection(const std::vector<FailedTrial>& failed) {
  if (failed.empty()) return "";
  constexpr size_t kShown = 10;
  std::string out = "failed trials (" + std::to_string(failed.size()) + "):\n";
  std::vector<std::string> hints;
  for (size_t i = 0; i < failed.size(); ++i) {
    const FailedTrial& f = failed[i];
    if (i < kShown) {
      out += "    trial " + std::to_string(f.index + 1) + " " + TerminalSafe(f.pairing) + ": " +
             (f.reason.empty() ? "failed" : f.reason) + "\n";
    }
    if (!f.hint.empty() && std::find(hints.begin(), hints.end(), f.hint) == hints.end()) {
      hints.push_back(f.hint);
    }
  }
  if (failed.size() > kShown) {
    out += "    ... and " + std::to_string(failed.size() - kShown) +
           " more (codlctl results ID --trials: exclude_reason)\n";
  }
  for (const auto& h : hints) out += "hint: " + h + "\n";
  return out;
}

}  // namespace

std::string FormatTable(const ExperimentResults& r, bool wide) {
  std::ostringstream out;
  // The narrow table fits kNarrowWidth columns for the usual pairings: its prose is wrapped, its
  // columns are the ones a reader judges a slowdown by; -o wide adds the rest.
  constexpr size_t kNarrowWidth = 120;
  auto prose = [&](const std::string& text, const std::string& indent) {
    return wide ? text : WrapWords(text, kNarrowWidth, indent);
  };
  if (std::string partial = UnfinishedLine(r); !partial.empty()) out << partial << "\n";
  out << "experiment " << TerminalSafe(r.name) << " (id " << r.experiment_id << ", seed " << r.seed
      << ")\n";
  if (r.crosstalk) {  // no victim: its idle window's "slowdown" is not a figure
    out << FormatCrosstalkTable(r.crosstalk_matrix);
    if (!r.failed_trials.empty())
      out << r.failed_trials.size() << " failed trial(s): codlctl results " << r.experiment_id
          << " -o json lists why\n";
    return out.str();
  }
  out << prose("metric: " + MetricDescription(r) +
                   " per trial; slowdown: median over trials vs the baseline's, " +
                   Fmt("%.0f", r.confidence * 100) + "% bootstrap CI, held-target trials; " +
                   (wide ? "all trials: flagged included; " : "") +
                   "p: Mann-Whitney U vs baseline [Holm-adjusted over the pairings], * "
                   "significant at 5% after adjustment" +
                   (wide ? "" : "; -o wide adds levels, all trials, cores and mde"),
               "  ")
      << "\n";

  // Each pairing is one aligned row plus optional indented detail lines below it.
  const std::vector<std::string> header = wide ? std::vector<std::string>{"pairing",
                                                                          "levels",
                                                                          "n",
                                                                          r.metric,
                                                                          "slowdown [CI]",
                                                                          "p [Holm]",
                                                                          "all trials [CI]",
                                                                          "flagged",
                                                                          "achieved",
                                                                          "cores",
                                                                          "mde"}
                                               : std::vector<std::string>{"pairing",
                                                                          "n",
                                                                          r.metric,
                                                                          "slowdown [CI]",
                                                                          "p [Holm]",
                                                                          "flagged",
                                                                          "achieved (% of target)"};
  std::vector<std::vector<std::string>> rows{header};
  std::vector<std::vector<std::string>> details{{}};
  for (const PairingSummary* sorted : SortedPairings(r)) {
    const PairingSummary& p = *sorted;
    const std::string slowdown = p.ci_small_n
                                     ? SlowdownCell(p.slowdown, kNaN, kNaN) + " [n/a: n < 3]"
                                     : SlowdownCell(p.slowdown, p.ci_low, p.ci_high);
    if (wide) {
      rows.push_back({p.pairing, Levels(p), std::to_string(p.n), MetricCell(r, p.metric_median),
                      slowdown, PCell(p),
                      p.baseline ? "-" : SlowdownCell(p.slowdown_all, p.ci_all_low, p.ci_all_high),
                      FlaggedCell(p), p.baseline ? "-" : Achieved(p, false), Cores(p), MdeCell(p)});
    } else {
      rows.push_back({p.pairing, std::to_string(p.n), MetricCell(r, p.metric_median), slowdown,
                      PCell(p), FlaggedCell(p), p.baseline ? "-" : AchievedBrief(p)});
    }
    std::vector<std::string> lines;
    // Several antagonists: the narrow cell has their percentages, this line their rates.
    if (!wide && !p.baseline && p.antagonists.size() > 1 && Achieved(p, true) != "-") {
      lines.push_back("achieved: " + Achieved(p, true));
    }
    if (std::string phases = PhasesLine(p); !phases.empty()) lines.push_back(phases);
    if (!p.ranks.ranks.empty()) lines.push_back(RanksLine(p.ranks));
    for (const NeighbourSummary& n : p.neighbours) lines.push_back(TerminalSafe(NeighbourLine(n)));
    if (std::isfinite(p.cache_total_bytes)) {
      lines.push_back("cache: " +
                      (std::isfinite(p.cache_resident_fraction)
                           ? Fmt("%.1f%%", 100 * p.cache_resident_fraction) + " of "
                           : std::string()) +
                      FormatSize(p.cache_total_bytes) +
                      " under victim.cache.paths resident at the victim's start (median)");
    }
    for (const std::string& c : p.confounds)
      lines.push_back("warning: confound: " + TerminalSafe(c));
    if (!p.baseline && std::isfinite(p.p_min) && p.p_min > 0.05) {
      lines.push_back("note: with " + std::to_string(p.n) +
                      " trials against the baseline's, p "
                      "cannot fall below " +
                      Fmt("%.3g", p.p_min) +
                      ": no outcome could be significant at 5% (raise repetitions)");
    }
    if (p.n_failed || p.n_flagged || p.n_not_run) {
      std::string s = "warning:";
      if (p.n_failed) s += " " + std::to_string(p.n_failed) + " failed";
      if (p.n_flagged) {
        s += std::string(p.n_failed ? "," : "") + " " + std::to_string(p.n_flagged) +
             " flagged (target missed, did not settle, too short to judge, or metric looks "
             "wrong)";
      }
      if (p.n_not_run) {
        s += std::string(p.n_failed || p.n_flagged ? "," : "") + " " + std::to_string(p.n_not_run) +
             " not run";
      }
      lines.push_back(s + "; excluded from the held-target figures" +
                      (p.n_flagged ? " (flagged ones are in \"all trials\")" : ""));
    }
    details.push_back(lines);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (size_t r_i = 0; r_i < rows.size(); ++r_i) {
    std::string line;
    for (size_t i = 0; i < rows[r_i].size(); ++i) {
      line += rows[r_i][i];
      if (i + 1 < rows[r_i].size()) line += std::string(width[i] - rows[r_i][i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
    for (const auto& d : details[r_i]) out << prose("    " + d, "        ") << "\n";
  }
  bool has_baseline =
      !r.pairings.empty() && r.pairings.front().baseline && r.pairings.front().n > 0;
  if (!r.stop_reason.empty()) out << "adaptive repetitions: " << r.stop_reason << "\n";
  if (r.resumptions > 0) {
    out << "resumed " << r.resumptions << (r.resumptions == 1 ? " time" : " times")
        << " (provenance \"resumptions\": when, from what state, trials kept)\n";
  }
  for (const ToleranceResult& t : r.tolerance) out << TerminalSafe(ToleranceLine(t)) << "\n";
  for (size_t i = 0; i < r.pressure.size();) {  // one line per workload
    size_t end = i;
    while (end < r.pressure.size() && r.pressure[end].workload == r.pressure[i].workload) ++end;
    const std::vector<PressureSummary> rows(r.pressure.begin() + static_cast<long>(i),
                                            r.pressure.begin() + static_cast<long>(end));
    out << TerminalSafe(PressureLine(rows)) << "\n";
    i = end;
  }
  if (!has_baseline) out << "warning: no measured baseline trials; slowdowns are unknown\n";
  if (r.n_metric_looks_wrong > 0) {
    out << "warning: " << r.n_metric_looks_wrong << " trial"
        << (r.n_metric_looks_wrong == 1 ? "" : "s")
        << " flagged because the victim's per-step values cannot be step times (first: "
        << TerminalSafe(r.metric_looks_wrong) << "); fix victim.progress\n";
  }
  if (r.noisy_baseline) {
    out << "warning: noisy baseline: CoV " << Fmt("%.1f", r.baseline_cov * 100) << "% > "
        << Fmt("%.1f", r.noisy_cov_threshold * 100) << "%; small slowdowns are not trustworthy\n";
  }
  if (wide) {
    out << FormatInteractionTable(r.interactions, r.confidence);
  } else {
    // Its aligned rows fit; its prose and notes are wrapped like the rest.
    std::istringstream interactions(FormatInteractionTable(r.interactions, r.confidence));
    for (std::string line; std::getline(interactions, line);) out << prose(line, "  ") << "\n";
  }
  if (wide) {
    out << FailedTrialsSection(r.failed_trials);
  } else {
    std::istringstream failed(FailedTrialsSection(r.failed_trials));
    for (std::string line; std::getline(failed, line);) out << prose(line, "        ") << "\n";
  }
  return out.str();
}

std::string FormatCsv(const ExperimentResults& r) {
  // One row per pairing x antagonist (one row for the baseline), every column a single value:
  // phase slowdowns are a table of their own (PhaseSummaryTable, --phases-summary).
  static const char* kColumns[] = {"experiment_id",
                                   "pairing",
                                   "baseline",
                                   "n",
                                   "n_flagged",
                                   "n_failed",
                                   "n_not_run",
                                   "metric_cov",
                                   "slowdown",
                                   "ci_low",
                                   "ci_high",
                                   "p_value",
                                   "p_method",
                                   "antagonist",
                                   "injector",
                                   "intensity",
                                   "intensity_kind",
                                   "level",
                                   "target_rate",
                                   "achieved_rate",
                                   "achieved_cov",
                                   "unit",
                                   "n_missed_target",
                                   "metric",
                                   "metric_unit",
                                   "metric_median",
                                   "n_all",
                                   "flag_rate",
                                   "slowdown_all",
                                   "ci_all_low",
                                   "ci_all_high",
                                   "max",
                                   "cores",
                                   "cpus",
                                   "victim_cores",
                                   "victim_cpus",
                                   "p_holm",
                                   "q_bh",
                                   "p_min",
                                   "ci_exact",
                                   "mde",
                                   "stop_reason"};
  std::ostringstream out;
  for (size_t i = 0; i < std::size(kColumns); ++i) out << (i ? "," : "") << kColumns[i];
  out << "\n";
  for (const auto& p : r.pairings) {
    std::vector<std::string> common = {CsvText(r.experiment_id),    CsvText(p.pairing),
                                       p.baseline ? "1" : "0",      std::to_string(p.n),
                                       std::to_string(p.n_flagged), std::to_string(p.n_failed),
                                       std::to_string(p.n_not_run), CsvNum(p.cov),
                                       CsvNum(p.slowdown),          CsvNum(p.ci_low),
                                       CsvNum(p.ci_high),           CsvNum(p.p_value),
                                       ToString(p.p_method)};
    // Columns added after the antagonist ones (documented order; old readers keep working).
    const std::vector<std::string> added = {r.metric,
                                            r.metric_unit,
                                            CsvNum(p.metric_median),
                                            std::to_string(p.n_all),
                                            CsvNum(p.flag_rate),
                                            CsvNum(p.slowdown_all),
                                            CsvNum(p.ci_all_low),
                                            CsvNum(p.ci_all_high)};
    // After the pairing-level additions: the antagonist's max, cores and cpus.
    auto emit = [&](const std::vector<std::string>& tail,
                    const std::vector<std::string>& antagonist_added) {
      std::string line;
      for (const auto& f : common) line += (line.empty() ? "" : ",") + CsvField(f);
      for (const auto& f : tail) line += "," + CsvField(f);
      for (const auto& f : added) line += "," + CsvField(f);
      for (const auto& f : antagonist_added) line += "," + CsvField(f);
      line += "," + CsvField(CsvNum(p.victim_cores)) + "," + CsvField(CsvText(p.victim_cpus));
      line += "," + CsvNum(p.p_holm) + "," + CsvNum(p.q_bh) + "," + CsvNum(p.p_min) + "," +
              (p.ci_exact ? "1" : "0");
      line += "," + CsvNum(p.mde) + "," + CsvField(CsvText(r.stop_reason));
      out << line << "\n";
    };
    if (p.antagonists.empty()) emit(std::vector<std::string>(10, ""), {"", "", ""});
    for (const auto& a : p.antagonists) {
      const std::string kind = IntensityKind(a);
      emit({CsvText(a.name), CsvText(a.injector), CsvText(a.intensity), kind,
            kind == "level" ? CsvNum(a.level) : "", CsvNum(a.target_rate), CsvNum(a.achieved_rate),
            CsvNum(a.achieved_cov), CsvText(a.unit), std::to_string(a.n_missed_target)},
           {a.max ? "1" : "0", CsvNum(a.cores), CsvText(a.cpus)});
    }
  }
  return out.str();
}

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
  j["state"] = r.state;
  j["complete"] = r.state == "done";
  j["trials_planned"] = r.trials_planned;
  j["trials_committed"] = r.trials_committed;
  j["resumptions"] = r.resumptions;
  j["pairings"] = Json::array();
  for (const auto& p : r.pairings) {
    Json pj;
    pj["pairing"] = p.pairing;
    pj["baseline"] = p.baseline;
    pj["n"] = p.n;
    pj["n_flagged"] = p.n_flagged;
    pj["n_failed"] = p.n_failed;
    pj["n_not_run"] = p.n_not_run;
    pj["median_metric_s"] = Num(p.median_metric);
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
    pj["phases"] = Json::array();
    for (const auto& ph : p.phases) {
      pj["phases"].push_back({{"phase", ph.phase},
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
    pj["neighbours"] = Json::array();
    for (const NeighbourSummary& n : p.neighbours) {
      pj["neighbours"].push_back({{"name", n.name},
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
    pj["cache_total_bytes"] = Num(p.cache_total_bytes);
    pj["cache_resident_fraction"] = Num(p.cache_resident_fraction);
    if (const TelemetrySummary& tm = p.telemetry; tm.n > 0) {
      pj["telemetry"] = {{"n", tm.n},
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
      pj["telemetry"]["gpu_note"] = tm.gpu_note;
      pj["telemetry"]["gpus"] = Json::array();
      for (const GpuTelemetrySummary& g : tm.gpus) {
        pj["telemetry"]["gpus"].push_back(
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
    }
    pj["antagonists"] = Json::array();
    for (const auto& a : p.antagonists) {
      pj["antagonists"].push_back({{"name", a.name},
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
    j["pairings"].push_back(std::move(pj));
  }
  j["interactions"] = InteractionsJson(r.interactions);
  j["tolerance"] = Json::array();
  for (const ToleranceResult& t : r.tolerance) {
    Json probes = Json::array();
    for (const ToleranceProbe& p : t.probes) {
      probes.push_back({{"level", p.level},
                        {"n", p.n},
                        {"slowdown", Num(p.slowdown)},
                        {"ci_low", Num(p.ci_low)},
                        {"ci_high", Num(p.ci_high)},
                        {"verdict", p.verdict}});
    }
    j["tolerance"].push_back({{"name", t.name},
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
  j["pressure"] = Json::array();
  for (const PressureSummary& p : r.pressure) {
    j["pressure"].push_back({{"workload", p.workload},
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
  j["crosstalk"] = r.crosstalk ? Json::parse(FormatCrosstalkJson(r.crosstalk_matrix)) : Json();
  j["n_metric_looks_wrong"] = r.n_metric_looks_wrong;
  j["metric_looks_wrong"] = r.metric_looks_wrong.empty() ? Json() : Json(r.metric_looks_wrong);
  j["failed_trials"] = Json::array();
  for (const FailedTrial& f : r.failed_trials) {
    j["failed_trials"].push_back({{"trial", f.index + 1},  // 1-based, as everywhere shown
                                  {"trial_index", f.index},
                                  {"pairing", f.pairing},
                                  {"reason", f.reason},
                                  {"hint", f.hint.empty() ? Json() : Json(f.hint)}});
  }
  return j.dump(2) + "\n";
}

}  // namespace codl::experiment
