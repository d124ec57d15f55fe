// Cross-talk renderings: see crosstalk.h. Field and column names are a public interface
// (docs/results.md, "Cross-talk").
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "lib/analysis/crosstalk.h"
#include "lib/analysis/tidy.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::experiment {

namespace {

std::string XtalkFmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A cell of the table: the value in the column's display unit, `*` own, `!` off-target large.
std::string XtalkCellText(const CrosstalkResource& res, const CrosstalkCell& c) {
  if (!std::isfinite(c.value)) return "n/a";
  std::string s;
  if (res.key == "cpu_cores") {
    s = XtalkFmt("%.2f", c.value);
  } else if (res.unit == "share") {
    s = XtalkFmt("%+.2f", c.value);
  } else if (res.key == "membw_bytes_per_s") {
    s = XtalkFmt("%+.2f", c.value / 1e9);
  } else if (res.unit == "bytes/s") {
    s = XtalkFmt("%+.1f", c.value / 1e6);
  } else {
    s = XtalkFmt("%+.0f", c.value / (1024.0 * 1024.0));
  }
  return s + (c.own ? "*" : c.large ? "!" : "");
}

nlohmann::json XtalkNumber(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

std::string FormatCrosstalkTable(const CrosstalkMatrix& m) {
  std::string out =
      "cross-talk: each antagonist alone, no victim, over an idle window of " +
      (std::isfinite(m.window_s) ? FormatDuration(m.window_s) : std::string("n/a")) +
      "; its footprint on each resource above the idle baseline's (medians over windows; "
      "baseline n=" +
      std::to_string(m.baseline_n) + ")\n";
  const auto& resources = CrosstalkResources();
  const std::vector<bool> shown = CrosstalkColumnsShown(m);
  TidyTable t;
  t.columns = {"antagonist", "n", "achieved"};
  for (size_t i = 0; i < resources.size(); ++i)
    if (shown[i]) t.columns.push_back(resources[i].title);
  for (const CrosstalkRow& row : m.rows) {
    std::vector<Cell> cells = {
        Cell::Text(row.pairing), Cell::Int(row.n),
        Cell::Text(std::isfinite(row.achieved_rate) ? FormatRate(row.achieved_rate, row.unit)
                                                    : "-")};
    for (size_t i = 0; i < resources.size(); ++i)
      if (shown[i]) cells.push_back(Cell::Text(XtalkCellText(resources[i], row.cells[i])));
    t.rows.push_back(std::move(cells));
  }
  if (m.rows.empty()) {
    out += "no single-antagonist pairing was measured\n";
  } else {
    out += RenderAligned(t);
  }
  out +=
      "* its own resource; ! off-target at or over its threshold (cpu 0.25 cores, psi +0.10, "
      "disk and net +1 MB/s, mem +256 MiB held, membw +1 GB/s; gpu util +0.10, gpu mem "
      "+256 MiB, pcie and nvlink +100 MB/s); n/a: the node does not count it\n";
  if (!m.membw_note.empty()) out += "membw: " + TerminalSafe(m.membw_note) + "\n";
  if (std::string gpu = CrosstalkGpuLeftOut(m); !gpu.empty()) out += TerminalSafe(gpu) + "\n";
  for (const CrosstalkRow& row : m.rows) {
    if (row.n_below_target == 0) continue;
    out += TerminalSafe(row.pairing) + ": below its target in " +
           std::to_string(row.n_below_target) + " of " + std::to_string(row.n) +
           " windows: its footprint at what it achieved\n";
  }
  bool any_check = false;
  for (const CrosstalkRow& row : m.rows) {
    if (!row.has_check) continue;
    if (!any_check) out += "independent counters (the antagonist's achieved rate vs the node's):\n";
    any_check = true;
    const CounterCheck& c = row.check;
    out += "  " + TerminalSafe(row.pairing) + ": ";
    if (std::isfinite(c.relative_error)) {
      out += "reported " + FormatBytesPerSecond(c.reported) + ", " + c.counter + " " +
             FormatBytesPerSecond(c.counted) + ": error " +
             XtalkFmt("%+.1f", 100 * c.relative_error) + "%\n";
    } else {
      out += c.counter + ": " + TerminalSafe(c.note) + "\n";
    }
  }
  bool any_off = false;
  for (const CrosstalkRow& row : m.rows) {
    for (const std::string& s : row.off_target) {
      if (!any_off) out += "off-target footprints:\n";
      any_off = true;
      out += "  " + TerminalSafe(s) + "\n";
    }
  }
  return out;
}

std::string FormatCrosstalkJson(const CrosstalkMatrix& m) {
  nlohmann::json j;
  j["window_s"] = XtalkNumber(m.window_s);
  j["baseline_n"] = m.baseline_n;
  j["membw_note"] = m.membw_note;
  j["gpu_note"] = m.gpu_note;
  j["resources"] = nlohmann::json::array();
  for (const auto& res : CrosstalkResources()) {
    j["resources"].push_back(
        {{"key", res.key}, {"title", res.title}, {"unit", res.unit}, {"threshold", res.threshold}});
  }
  j["rows"] = nlohmann::json::array();
  const auto& resources = CrosstalkResources();
  for (const CrosstalkRow& row : m.rows) {
    nlohmann::json r = {{"pairing", row.pairing},
                        {"antagonist", row.antagonist},
                        {"injector", row.injector},
                        {"intensity", row.intensity},
                        {"achieved_rate", XtalkNumber(row.achieved_rate)},
                        {"unit", row.unit},
                        {"n", row.n},
                        {"n_below_target", row.n_below_target},
                        {"off_target", row.off_target}};
    nlohmann::json cells = nlohmann::json::object();
    for (size_t i = 0; i < resources.size(); ++i) {
      cells[resources[i].key] = {{"value", XtalkNumber(row.cells[i].value)},
                                 {"own", row.cells[i].own},
                                 {"large", row.cells[i].large}};
    }
    r["resources"] = cells;
    if (row.has_check) {
      r["counter_check"] = {{"counter", row.check.counter},
                            {"reported", XtalkNumber(row.check.reported)},
                            {"counted", XtalkNumber(row.check.counted)},
                            {"relative_error", XtalkNumber(row.check.relative_error)},
                            {"note", row.check.note}};
    } else {
      r["counter_check"] = nullptr;
    }
    j["rows"].push_back(r);
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string FormatCrosstalkCsv(const CrosstalkMatrix& m) {
  TidyTable t;
  t.columns = {"pairing", "antagonist", "injector", "intensity", "resource",
               "unit",    "value",      "own",      "large",     "threshold"};
  const auto& resources = CrosstalkResources();
  for (const CrosstalkRow& row : m.rows) {
    for (size_t i = 0; i < resources.size(); ++i) {
      t.rows.push_back({Cell::Text(row.pairing), Cell::Text(row.antagonist),
                        Cell::Text(row.injector), Cell::Text(row.intensity),
                        Cell::Text(resources[i].key), Cell::Text(resources[i].unit),
                        Cell::Number(row.cells[i].value), Cell::Bool(row.cells[i].own),
                        Cell::Bool(row.cells[i].large), Cell::Number(resources[i].threshold)});
    }
  }
  return RenderCsv(t);
}

}  // namespace codl::experiment
