// ComparisonTable / FormatComparison / FormatComparisonJson. Names are documented in
// docs/results.md ("Comparing experiments"); change them only together with that page.
#include <nlohmann/json.hpp>

#include <algorithm>
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

// The one workload antagonist of a cell, or null (none, or several: the JSON lists them).
const NeighbourSummary* OnlyNeighbour(const CompareCell& cell) {
  return cell.present && cell.neighbours.size() == 1 ? &cell.neighbours[0] : nullptr;
}

// "    job2@run: job2 beside the victim #1 1.77x [1.56, 1.93], #2 1.44x [1.34, 1.50]; combined
// throughput #1 1.33, #2 1.44" per workload antagonist of a matched pairing.
std::string TwoWayLines(const Comparison& c) {
  std::string out;
  for (const auto& p : c.pairings) {
    if (!p.matched) continue;
    std::vector<std::string> names;
    for (const auto& cell : p.cells)
      for (const auto& n : cell.neighbours)
        if (std::find(names.begin(), names.end(), n.name) == names.end()) names.push_back(n.name);
    for (const auto& name : names) {
      std::string own, combined;
      for (size_t i = 0; i < p.cells.size(); ++i) {
        const NeighbourSummary* n = nullptr;
        for (const auto& x : p.cells[i].neighbours)
          if (x.name == name) n = &x;
        const std::string tag = "#" + std::to_string(i + 1) + " ";
        own += (own.empty() ? "" : ", ") + tag +
               (n ? RatioText(n->slowdown, n->ci_low, n->ci_high, true) : "-");
        combined +=
            (combined.empty() ? "" : ", ") + tag +
            (n && std::isfinite(n->combined_throughput) ? Printf("%.2f", n->combined_throughput)
                                                        : "-");
      }
      out += "  " + TerminalSafe(p.pairing) + ": " + TerminalSafe(name) + " beside the victim " +
             own + "; combined throughput " + combined + "\n";
    }
  }
  return out.empty()
             ? ""
             : "two-way (workload antagonists: their own slowdown beside the victim):\n" + out;
}

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
  for (size_t i = 0; i < c.experiments.size(); ++i)
    for (const char* name : {"neighbour_slowdown", "combined_throughput"})
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
    for (const auto& cell : p.cells) {
      const NeighbourSummary* n = OnlyNeighbour(cell);
      row.push_back(n ? Cell::Number(n->slowdown) : Cell::Missing());
      row.push_back(n ? Cell::Number(n->combined_throughput) : Cell::Missing());
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
  out += TwoWayLines(c);
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
      Json neighbours = Json::array();
      for (const auto& n : cell.neighbours) {
        neighbours.push_back({{"name", n.name},
                              {"unit", n.unit},
                              {"n", n.n},
                              {"n_solo", n.n_solo},
                              {"slowdown", JsonNumber(n.slowdown)},
                              {"ci_low", JsonNumber(n.ci_low)},
                              {"ci_high", JsonNumber(n.ci_high)},
                              {"p_value", JsonNumber(n.p_value)},
                              {"combined_throughput", JsonNumber(n.combined_throughput)}});
      }
      pj["experiments"].push_back({{"experiment_id", c.experiments[i].first},
                                   {"present", cell.present},
                                   {"n", cell.n},
                                   {"slowdown", JsonNumber(cell.slowdown)},
                                   {"ci_low", JsonNumber(cell.ci_low)},
                                   {"ci_high", JsonNumber(cell.ci_high)},
                                   {"neighbours", std::move(neighbours)}});
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
