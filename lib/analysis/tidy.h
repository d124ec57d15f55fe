// Tidy tables: one observation per row, named columns, typed cells. The long-format exports
// (`codlctl results --trials|--phases`) and `codlctl compare` build one and render it as CSV
// (readable by pandas/R as is), JSON lines (one object per row) or an aligned terminal table, so
// the three outputs of a command always carry the same columns. docs/results.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace codl::experiment {

// One cell. A number that is not finite is missing: empty in CSV, null in JSON, "-" in tables.
struct Cell {
  enum class Kind { kText, kNumber, kBool, kMissing };
  Kind kind = Kind::kMissing;
  std::string text;
  double number = 0;
  bool flag = false;

  static Cell Text(std::string s);
  static Cell Number(double v);  // NaN/inf -> missing
  static Cell Int(int64_t v) { return Number(static_cast<double>(v)); }
  static Cell Bool(bool b);
  static Cell Missing() { return Cell{}; }
};

struct TidyTable {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;  // each as long as `columns`
};

// RFC 4180 CSV with a header line; numbers in the shortest form that reads back exactly, bools
// as 1/0, text neutralized against spreadsheet formulas (lib/common/csv.h).
std::string RenderCsv(const TidyTable& t);
// One JSON object per row and line (JSON lines), keys in column order.
std::string RenderJsonLines(const TidyTable& t);
// Aligned columns for terminals (text made terminal-safe); the layout may change.
std::string RenderAligned(const TidyTable& t);

// "table" | "json" | "csv" -> the matching renderer; "" for another name.
std::string Render(const TidyTable& t, const std::string& output);

}  // namespace codl::experiment
