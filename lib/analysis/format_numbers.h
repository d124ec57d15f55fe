// Number and table formatting shared by the interaction and prediction formatters (table,
// JSON, CSV).
// Internal to codl_analysis. Distinct names: the older formatters keep file-local helpers with
// other conventions ("" for NaN), and a unity build sees them side by side.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace codl::experiment {

// printf-style with `format`; "-" for NaN/inf (a table cell).
inline std::string FixedOrDash(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A JSON number, or null for NaN/inf.
inline nlohmann::ordered_json JsonNumberOrNull(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

// Round-trip text of a double for CSV; "" for NaN/inf.
inline std::string CsvRoundTrip(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Rows as left-aligned columns two spaces apart, trailing blanks trimmed.
inline void PrintAligned(const std::vector<std::vector<std::string>>& rows,
                         std::ostringstream& out) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace codl::experiment
