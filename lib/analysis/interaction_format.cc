#include "lib/analysis/interaction_format.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "lib/analysis/format_numbers.h"
#include "lib/analysis/results.h"
#include "lib/common/csv.h"

namespace codl::experiment {
namespace {

using Json = nlohmann::ordered_json;

std::string Joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string RatioCell(const InteractionSummary& s) {
  std::string cell = FixedOrDash("%.3f", s.ratio);
  if (s.ci_small_n) return cell + " [n/a: n < 3]";
  if (std::isfinite(s.ci_low))
    cell += " [" + FixedOrDash("%.3f", s.ci_low) + ", " + FixedOrDash("%.3f", s.ci_high) + "]";
  return cell;
}

std::string SinglesCell(const InteractionSummary& s) {
  std::string cell;
  for (double x : s.single_slowdowns) cell += (cell.empty() ? "" : " x ") + FixedOrDash("%.3fx", x);
  return cell.empty() ? "-" : cell;
}

}  // namespace

std::string FormatInteractionTable(const std::vector<InteractionSummary>& interactions,
                                   double confidence) {
  if (interactions.empty()) return "";
  std::ostringstream out;
  out << "\ninteraction: each combination against its singles at the same intensities; "
         "x-pred = product of the singles' slowdowns, +-pred = 1 + sum of (single - 1); ratio = "
         "measured / x-pred with a "
      << FixedOrDash("%.0f", confidence * 100)
      << "% bootstrap CI resampling baseline, singles and combination together; "
         "super-additive (> 1) or sub-additive (< 1) when the CI excludes 1\n";
  std::vector<std::vector<std::string>> rows{{"combination", "n", "singles", "measured", "x-pred",
                                              "+-pred", "ratio [CI]", "interference"}};
  std::vector<std::string> notes;
  for (const auto& s : interactions) {
    if (!s.missing_singles.empty()) {
      notes.push_back("note: " + s.pairing +
                      ": no interaction figures, no measured trials of its singles " +
                      Joined(s.missing_singles, ", ") +
                      " (not planned -- `pairings: pairs` plans them -- or all flagged or failed)");
      continue;
    }
    if (s.n == 0) {
      notes.push_back("note: " + s.pairing +
                      ": no interaction figures, no measured trials of the combination (all "
                      "flagged, failed or not run)");
      continue;
    }
    rows.push_back({s.pairing, std::to_string(s.n), SinglesCell(s),
                    FixedOrDash("%.3fx", s.slowdown), FixedOrDash("%.3fx", s.multiplicative),
                    FixedOrDash("%.3fx", s.additive), RatioCell(s),
                    s.verdict == InteractionVerdict::kNone ? "-" : ToString(s.verdict)});
  }
  if (rows.size() > 1) PrintAligned(rows, out);
  for (const auto& n : notes) out << n << "\n";
  return out.str();
}

Json InteractionsJson(const std::vector<InteractionSummary>& interactions) {
  Json arr = Json::array();
  for (const auto& s : interactions) {
    Json singles = Json::array();
    for (size_t i = 0; i < s.singles.size(); ++i) {
      const double x = i < s.single_slowdowns.size() ? s.single_slowdowns[i] : kNaN;
      singles.push_back({{"pairing", s.singles[i]}, {"slowdown", JsonNumberOrNull(x)}});
    }
    arr.push_back({{"pairing", s.pairing},
                   {"n", s.n},
                   {"singles", singles},
                   {"missing_singles", s.missing_singles},
                   {"slowdown", JsonNumberOrNull(s.slowdown)},
                   {"multiplicative", JsonNumberOrNull(s.multiplicative)},
                   {"additive", JsonNumberOrNull(s.additive)},
                   {"ratio", JsonNumberOrNull(s.ratio)},
                   {"ci_low", JsonNumberOrNull(s.ci_low)},
                   {"ci_high", JsonNumberOrNull(s.ci_high)},
                   {"ci_small_n", s.ci_small_n},
                   {"verdict", ToString(s.verdict)}});
  }
  return arr;
}

std::string FormatInteractionsCsv(const ExperimentResults& r) {
  std::ostringstream out;
  out << "experiment_id,pairing,n,singles,single_slowdowns,missing_singles,slowdown,"
         "multiplicative,additive,ratio,ci_low,ci_high,ci_small_n,verdict\n";
  for (const auto& s : r.interactions) {
    std::string slowdowns;
    for (double x : s.single_slowdowns)
      slowdowns += (slowdowns.empty() ? "" : ";") + CsvRoundTrip(x);
    const std::vector<std::string> row = {CsvText(r.experiment_id),
                                          CsvText(s.pairing),
                                          std::to_string(s.n),
                                          CsvText(Joined(s.singles, ";")),
                                          slowdowns,
                                          CsvText(Joined(s.missing_singles, ";")),
                                          CsvRoundTrip(s.slowdown),
                                          CsvRoundTrip(s.multiplicative),
                                          CsvRoundTrip(s.additive),
                                          CsvRoundTrip(s.ratio),
                                          CsvRoundTrip(s.ci_low),
                                          CsvRoundTrip(s.ci_high),
                                          s.ci_small_n ? "1" : "0",
                                          ToString(s.verdict)};
    std::string line;
    for (const auto& f : row) line += (line.empty() ? "" : ",") + CsvField(f);
    out << line << "\n";
  }
  return out.str();
}

}  // namespace codl::experiment
