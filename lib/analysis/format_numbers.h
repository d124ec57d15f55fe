// Number formatting shared by the interaction and prediction formatters (table, JSON, CSV).
// Internal to codl_analysis. Distinct names: the older formatters keep file-local helpers with
// other conventions ("" for NaN), and a unity build sees them side by side.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>

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

}  // namespace codl::experiment
