// ComparisonTable / FormatComparison / FormatComparisonJson. Names are documented in
// docs/results.md ("Comparing experiments"); change them only together with that page.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

#include "lib/analysis/compare.h"
#include "lib/common/utf8.h"

namespace codl::experiment {
namespace {

std::string Printf(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// "1.42x [1.30, 1.55]", "1.42x [n/a: n < 3]", "-" when not run.
std::string RatioText(double value, double low, double high, bool present) {
  if (!present || !std::isfinite(value)) return "-";
  std::string s = Printf("%.2fx", value);
  s += std::isfinite(low) ? " [" + Printf("%.2f", low) + ", " + Printf("%.2f", high) + "]"
                          : " [n/a: n < 3]";
  return s;
}

std::string Suffix(size_t i) { return "_" + std::to_string(i + 1); }

using Json = nlohmann::ordered_json;
Json JsonNumber(double v) { return std::isfinite(v) ? Json(v) : Json(); }

}  // namespace

TidyTable ComparisonTable(const Comparison& c) {
  TidyTable t;
  t.columns = {"pairing", "matched"};
  for (size_t i = 0; i < c.experiments.size(); ++i)
    for (const char* name : {"n", "slowdown", "ci_low", "ci_high"})
      t.columns.push_back(name + Suffix(i));
  for (size_t i = 1; i < c.experiments.size(); ++i)
    for (const char* name : {"ratio", "ratio_ci_low", "ratio_ci_high"})
      t.columns.push_back(name + Suffix(i));
  for (const auto& p : c.pairings) {
    std::vector<Cell> row = {Cell::Text(p.pairing), Cell::Bool(p.matched)};
    for (const auto& cell : p.cells) {
      row.push_back(cell.present ? Cell::Int(cell.n) : Cell::Missing());
      row.push_back(Cell::Number(cell.slowdown));
      row.push_back(Cell::Number(cell.ci_low));
      row.push_back(Cell::Number(cell.ci_high));
    }
    for (const auto& r : p.ratios) {
      row.push_back(Cell::Number(r.ratio));
      row.push_back(Cell::Number(r.ci_low));
      row.push_back(Cell::Number(r.ci_high));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string FormatComparison(const Comparison& c) {
  std::string out = "metric: " + c.metric + "; slowdown [" + Printf("%.0f", 100 * c.confidence) +
                    "% CI] per experiment; ratio = slowdown / slowdown in #1, bootstrap CI\n";
  for (size_t i = 0; i < c.experiments.size(); ++i)
    out += "#" + std::to_string(i + 1) + " = " + TerminalSafe(c.experiments[i].first) + " (" +
           TerminalSafe(c.experiments[i].second) + ")\n";
  TidyTable t;
  t.columns = {"pairing"};
  for (size_t i = 0; i < c.experiments.size(); ++i)
    t.columns.push_back("#" + std::to_string(i + 1));
  for (size_t i = 1; i < c.experiments.size(); ++i)
    t.columns.push_back("#" + std::to_string(i + 1) + "/#1");
  std::string unmatched;
  for (const auto& p : c.pairings) {
    if (!p.matched) {
      for (size_t i = 0; i < p.cells.size(); ++i)
        if (p.cells[i].present)
          unmatched +=
              "  " + TerminalSafe(p.pairing) + " (only in #" + std::to_string(i + 1) + ")\n";
      continue;
    }
    std::vector<Cell> row = {Cell::Text(p.pairing)};
    for (const auto& cell : p.cells)
      row.push_back(Cell::Text(RatioText(cell.slowdown, cell.ci_low, cell.ci_high, cell.present)));
    for (size_t k = 0; k < p.ratios.size(); ++k) {
      const auto& r = p.ratios[k];
      row.push_back(Cell::Text(RatioText(r.ratio, r.ci_low, r.ci_high, p.cells[k + 1].present)));
    }
    t.rows.push_back(std::move(row));
  }
  out += t.rows.empty() ? "no pairing is shared by two of these experiments\n" : RenderAligned(t);
  if (!unmatched.empty()) out += "unmatched pairings (not compared):\n" + unmatched;
  return out;
}

std::string FormatComparisonJson(const Comparison& c) {
  Json j;
  j["metric"] = c.metric;
  j["metric_unit"] = c.metric_unit;
  j["confidence"] = c.confidence;
  j["bootstrap_resamples"] = c.resamples;
  j["experiments"] = Json::array();
  for (const auto& [id, name] : c.experiments)
    j["experiments"].push_back({{"experiment_id", id}, {"name", name}});
  j["pairings"] = Json::array();
  j["unmatched"] = Json::array();
  for (const auto& p : c.pairings) {
    Json pj;
    pj["pairing"] = p.pairing;
    pj["matched"] = p.matched;
    pj["experiments"] = Json::array();
    for (size_t i = 0; i < p.cells.size(); ++i) {
      const auto& cell = p.cells[i];
      pj["experiments"].push_back({{"experiment_id", c.experiments[i].first},
                                   {"present", cell.present},
                                   {"n", cell.n},
                                   {"slowdown", JsonNumber(cell.slowdown)},
                                   {"ci_low", JsonNumber(cell.ci_low)},
                                   {"ci_high", JsonNumber(cell.ci_high)}});
      if (!p.matched && cell.present)
        j["unmatched"].push_back(
            {{"experiment_id", c.experiments[i].first}, {"pairing", p.pairing}});
    }
    pj["ratios"] = Json::array();
    for (size_t k = 0; k < p.ratios.size(); ++k) {
      pj["ratios"].push_back({{"experiment_id", c.experiments[k + 1].first},
                              {"vs", c.experiments[0].first},
                              {"ratio", JsonNumber(p.ratios[k].ratio)},
                              {"ci_low", JsonNumber(p.ratios[k].ci_low)},
                              {"ci_high", JsonNumber(p.ratios[k].ci_high)}});
    }
    j["pairings"].push_back(std::move(pj));
  }
  return j.dump(2) + "\n";
}

}  // namespace codl::experiment
