// FormatTable / FormatCsv / FormatJson for ExperimentResults. Names are documented in
// docs/results.md; change them only together with that page.
#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lib/analysis/results.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::experiment {
namespace {

std::string Fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// "read_s" -> "read": the table speaks of phases, not of their JSON field names.
std::string PhaseLabel(const std::string& phase) {
  if (phase.size() > 2 && phase.compare(phase.size() - 2, 2, "_s") == 0) {
    return phase.substr(0, phase.size() - 2);
  }
  return phase;
}

std::string Levels(const PairingSummary& p) {
  if (p.baseline) return "-";
  std::string s;
  for (const auto& a : p.antagonists) s += (s.empty() ? "" : " ") + a.name + "=" + a.intensity;
  return s;
}

std::string Achieved(const PairingSummary& p) {
  std::string s;
  for (const auto& a : p.antagonists) {
    if (!std::isfinite(a.achieved_rate)) continue;
    if (!s.empty()) s += ", ";
    s += a.name + " " + FormatRate(a.achieved_rate, a.unit.empty() ? "bytes/s" : a.unit);
    if (std::isfinite(a.target_rate) && a.target_rate > 0) {
      s += " (" + Fmt("%.0f", 100 * a.achieved_rate / a.target_rate) + "% of target)";
    }
  }
  return s.empty() ? "-" : s;
}

std::string SlowdownCell(const PairingSummary& p) {
  if (!std::isfinite(p.slowdown)) return "-";
  std::string s = Fmt("%.2fx", p.slowdown);
  if (std::isfinite(p.ci_low))
    s += " [" + Fmt("%.2f", p.ci_low) + ", " + Fmt("%.2f", p.ci_high) + "]";
  return s;
}

// A text cell that a spreadsheet would run as a formula (=, +, @, a tab or CR first, or '-'
// before a non-number) gets a leading apostrophe (the OWASP CSV-injection rule); numbers are
// written by CsvNum and never pass through here.
std::string CsvText(const std::string& s) {
  if (s.empty()) return s;
  const char c = s[0];
  const bool number_after_minus =
      c == '-' && s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
  if (c == '=' || c == '+' || c == '@' || c == '\t' || c == '\r' ||
      (c == '-' && !number_after_minus && s.size() > 1)) {
    return "'" + s;
  }
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
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

std::string FormatTable(const ExperimentResults& r) {
  std::ostringstream out;
  out << "experiment " << TerminalSafe(r.name) << " (id " << r.experiment_id << ", seed " << r.seed
      << ")\n";
  out << "metric: victim median step time (or wall time); slowdown: median / baseline median, "
      << Fmt("%.0f", r.confidence * 100) << "% bootstrap CI; p: Mann-Whitney U vs baseline\n";

  // Each pairing is one aligned row plus optional indented detail lines below it.
  const std::vector<std::string> header = {"pairing",       "levels", "n",       "median",
                                           "slowdown [CI]", "p",      "achieved"};
  std::vector<std::vector<std::string>> rows{header};
  std::vector<std::vector<std::string>> details{{}};
  for (const auto& p : r.pairings) {
    std::string median = std::isfinite(p.median_metric) ? FormatDuration(p.median_metric) : "-";
    std::string pv = std::isfinite(p.p_value) ? Fmt("%.3g", p.p_value) : "-";
    rows.push_back({p.pairing, Levels(p), std::to_string(p.n), median, SlowdownCell(p), pv,
                    p.baseline ? "-" : Achieved(p)});
    std::vector<std::string> lines;
    if (!p.phases.empty()) {
      std::string s = "phases:";
      for (size_t i = 0; i < p.phases.size(); ++i) {
        const auto& ph = p.phases[i];
        // The baseline's phases as times (its slowdowns are 1 by definition); others as
        // slowdowns, or as times when the baseline lacks that phase.
        const bool as_time = p.baseline || !std::isfinite(ph.slowdown);
        s += std::string(i ? ", " : " ") + PhaseLabel(ph.phase) + " " +
             (as_time ? FormatDuration(ph.median_s) : Fmt("%.2fx", ph.slowdown));
      }
      lines.push_back(s);
    }
    if (p.n_failed || p.n_flagged || p.n_not_run) {
      std::string s = "warning:";
      if (p.n_failed) s += " " + std::to_string(p.n_failed) + " failed";
      if (p.n_flagged) {
        s += std::string(p.n_failed ? "," : "") + " " + std::to_string(p.n_flagged) +
             " flagged (antagonist missed its target)";
      }
      if (p.n_not_run) {
        s += std::string(p.n_failed || p.n_flagged ? "," : "") + " " + std::to_string(p.n_not_run) +
             " not run";
      }
      lines.push_back(s + "; excluded from the figures");
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
    for (const auto& d : details[r_i]) out << "    " << d << "\n";
  }
  bool has_baseline =
      !r.pairings.empty() && r.pairings.front().baseline && r.pairings.front().n > 0;
  if (!has_baseline) out << "warning: no measured baseline trials; slowdowns are unknown\n";
  if (r.noisy_baseline) {
    out << "warning: noisy baseline: CoV " << Fmt("%.1f", r.baseline_cov * 100) << "% > "
        << Fmt("%.1f", r.noisy_cov_threshold * 100) << "%; small slowdowns are not trustworthy\n";
  }
  return out.str();
}

std::string FormatCsv(const ExperimentResults& r) {
  static const char* kColumns[] = {"experiment_id",
                                   "pairing",
                                   "baseline",
                                   "n",
                                   "n_flagged",
                                   "n_failed",
                                   "n_not_run",
                                   "median_metric_s",
                                   "metric_cov",
                                   "slowdown",
                                   "ci_low",
                                   "ci_high",
                                   "p_value",
                                   "p_method",
                                   "phase_slowdowns",
                                   "antagonist",
                                   "injector",
                                   "intensity",
                                   "level",
                                   "target_rate",
                                   "achieved_rate",
                                   "achieved_cov",
                                   "unit",
                                   "n_missed_target"};
  std::ostringstream out;
  for (size_t i = 0; i < std::size(kColumns); ++i) out << (i ? "," : "") << kColumns[i];
  out << "\n";
  for (const auto& p : r.pairings) {
    std::string phases;
    for (const auto& ph : p.phases) {
      phases += (phases.empty() ? "" : ";") + ph.phase + "=" + CsvNum(ph.slowdown);
    }
    std::vector<std::string> common = {CsvText(r.experiment_id),
                                       CsvText(p.pairing),
                                       p.baseline ? "1" : "0",
                                       std::to_string(p.n),
                                       std::to_string(p.n_flagged),
                                       std::to_string(p.n_failed),
                                       std::to_string(p.n_not_run),
                                       CsvNum(p.median_metric),
                                       CsvNum(p.cov),
                                       CsvNum(p.slowdown),
                                       CsvNum(p.ci_low),
                                       CsvNum(p.ci_high),
                                       CsvNum(p.p_value),
                                       ToString(p.p_method),
                                       CsvText(phases)};
    auto emit = [&](const std::vector<std::string>& tail) {
      std::string line;
      for (const auto& f : common) line += (line.empty() ? "" : ",") + CsvField(f);
      for (const auto& f : tail) line += "," + CsvField(f);
      out << line << "\n";
    };
    if (p.antagonists.empty()) emit(std::vector<std::string>(9, ""));
    for (const auto& a : p.antagonists) {
      emit({CsvText(a.name), CsvText(a.injector), CsvText(a.intensity), CsvNum(a.level),
            CsvNum(a.target_rate), CsvNum(a.achieved_rate), CsvNum(a.achieved_cov), CsvText(a.unit),
            std::to_string(a.n_missed_target)});
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
  j["noisy_cov_threshold"] = r.noisy_cov_threshold;
  j["baseline_cov"] = Num(r.baseline_cov);
  j["noisy_baseline"] = r.noisy_baseline;
  j["created_unix_ms"] = r.created_unix_ms;
  j["finished_unix_ms"] = r.finished_unix_ms;
  j["yaml"] = r.yaml;
  // Stored by the controller as JSON text; a damaged one is shown as null, not a failure.
  Json prov = Json::parse(r.provenance_json, nullptr, false);
  j["provenance"] = prov.is_discarded() ? Json() : prov;
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
    pj["slowdown"] = Num(p.slowdown);
    pj["ci_low"] = Num(p.ci_low);
    pj["ci_high"] = Num(p.ci_high);
    pj["p_value"] = Num(p.p_value);
    pj["p_method"] = p.p_method == MannWhitneyMethod::kNone ? Json() : Json(ToString(p.p_method));
    pj["phases"] = Json::array();
    for (const auto& ph : p.phases) {
      pj["phases"].push_back(
          {{"phase", ph.phase}, {"median_s", Num(ph.median_s)}, {"slowdown", Num(ph.slowdown)}});
    }
    pj["antagonists"] = Json::array();
    for (const auto& a : p.antagonists) {
      pj["antagonists"].push_back({{"name", a.name},
                                   {"injector", a.injector},
                                   {"intensity", a.intensity},
                                   {"level", a.level},
                                   {"target_rate", Num(a.target_rate)},
                                   {"achieved_rate", Num(a.achieved_rate)},
                                   {"achieved_cov", Num(a.achieved_cov)},
                                   {"unit", a.unit},
                                   {"n_missed_target", a.n_missed_target}});
    }
    j["pairings"].push_back(std::move(pj));
  }
  return j.dump(2) + "\n";
}

}  // namespace codl::experiment
