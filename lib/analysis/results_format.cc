// FormatTable / FormatCsv for ExperimentResults (FormatJson is in results_json.cc). Names are
// documented in docs/results.md; change them only together with that page.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "lib/analysis/interaction_format.h"
#include "lib/analysis/pairing_order.h"
#include "lib/analysis/results.h"
#include "lib/analysis/tidy.h"
#include "lib/common/csv.h"
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

// The indented lines under a pairing's row: rates, phases, ranks, neighbours, the cache, its
// confounds and warnings.
std::vector<std::string> DetailLines(const PairingSummary& p, bool wide) {
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
  for (const std::string& c : p.confounds) lines.push_back("warning: confound: " + TerminalSafe(c));
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
  return lines;
}

// Each row aligned in columns two spaces apart, its detail lines below it, indented.
std::string AlignedRows(
    const std::vector<std::vector<std::string>>& rows,
    const std::vector<std::vector<std::string>>& details,
    const std::function<std::string(const std::string&, const std::string&)>& prose) {
  std::ostringstream out;
  std::vector<size_t> width(rows.empty() ? 0 : rows.front().size(), 0);
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
  return out.str();
}

// After the rows: how the repetitions stopped, who submitted, resumptions, tolerance and
// pressure lines, and the experiment's warnings.
std::string Footer(const ExperimentResults& r) {
  std::ostringstream out;
  bool has_baseline =
      !r.pairings.empty() && r.pairings.front().baseline && r.pairings.front().n > 0;
  if (!r.stop_reason.empty()) out << "adaptive repetitions: " << r.stop_reason << "\n";
  if (!r.submitter.empty()) out << "submitted by " << TerminalSafe(r.submitter) << "\n";
  if (!r.gpu_device.empty()) {
    out << "device: " << TerminalSafe(r.gpu_device)
        << " (the GPU figures are the stand-in's model, not a GPU's: docs/gpu.md)\n";
  }
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
  return out.str();
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
  if (std::string retried = RetriedLine(r); !retried.empty()) out << retried << "\n";
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
    details.push_back(DetailLines(p, wide));
  }
  out << AlignedRows(rows, details, prose);
  out << Footer(r);
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

}  // namespace codl::experiment
