#include "lib/analysis/tidy.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "lib/common/csv.h"
#include "lib/common/json_line.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::experiment {
namespace {

// Shortest text that reads back as the same double: exports must not round the data.
std::string ShortestNumber(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string CsvCell(const Cell& c) {
  switch (c.kind) {
    case Cell::Kind::kText: return CsvField(CsvText(c.text));
    case Cell::Kind::kNumber: return ShortestNumber(c.number);
    case Cell::Kind::kBool: return c.flag ? "1" : "0";
    case Cell::Kind::kMissing: return "";
  }
  return "";
}

std::string PlainCell(const Cell& c) {
  switch (c.kind) {
    case Cell::Kind::kText: return c.text.empty() ? "-" : TerminalSafe(c.text);
    case Cell::Kind::kNumber: {
      char buf[32];
      // Whole numbers whole (a trial index, started_unix_ms 1796150400123, not 1.79615e+12).
      if (c.number == std::trunc(c.number) && std::fabs(c.number) < 9.007199254740992e15) {
        std::snprintf(buf, sizeof buf, "%.0f", c.number);
      } else {
        std::snprintf(buf, sizeof buf, "%.6g", c.number);
      }
      return buf;
    }
    case Cell::Kind::kBool: return c.flag ? "yes" : "no";
    case Cell::Kind::kMissing: return "-";
  }
  return "-";
}

// Display width, counting UTF-8 continuation bytes as nothing (good enough for alignment).
size_t Width(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
}

}  // namespace

Cell Cell::Text(std::string s) {
  Cell c;
  c.kind = Kind::kText;
  c.text = std::move(s);
  return c;
}

Cell Cell::Number(double v) {
  Cell c;
  if (!std::isfinite(v)) return c;
  c.kind = Kind::kNumber;
  c.number = v;
  return c;
}

Cell Cell::Bool(bool b) {
  Cell c;
  c.kind = Kind::kBool;
  c.flag = b;
  return c;
}

std::string RenderCsv(const TidyTable& t) {
  std::string out;
  for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + CsvField(t.columns[i]);
  out += "\n";
  for (const auto& row : t.rows) {
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + CsvCell(row[i]);
    out += "\n";
  }
  return out;
}

std::string RenderJsonLines(const TidyTable& t) {
  std::string out;
  for (const auto& row : t.rows) {
    JsonLine j;
    for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
      const Cell& c = row[i];
      switch (c.kind) {
        case Cell::Kind::kText: j.Add(t.columns[i], std::string_view(c.text)); break;
        case Cell::Kind::kNumber: j.AddRaw(t.columns[i], ShortestNumber(c.number)); break;
        case Cell::Kind::kBool: j.Add(t.columns[i], c.flag); break;
        case Cell::Kind::kMissing: j.AddRaw(t.columns[i], "null"); break;
      }
    }
    out += j.str() + "\n";
  }
  return out;
}

// "started_unix_ms" -> "started": a table shows the time itself (ISO 8601, UTC), not the number.
bool IsUnixMs(const std::string& column) {
  constexpr std::string_view kSuffix = "_unix_ms";
  return column.size() > kSuffix.size() &&
         column.compare(column.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

std::string RenderAligned(const TidyTable& t) {
  std::vector<std::vector<std::string>> text;
  std::vector<std::string> header = t.columns;
  for (auto& h : header) {
    if (IsUnixMs(h)) h.resize(h.size() - 8);
  }
  text.push_back(std::move(header));
  for (const auto& row : t.rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < row.size(); ++i) {
      const Cell& c = row[i];
      const bool time = i < t.columns.size() && IsUnixMs(t.columns[i]) &&
                        c.kind == Cell::Kind::kNumber && c.number > 0;
      line.push_back(time ? FormatUtcMs(static_cast<int64_t>(c.number)) : PlainCell(c));
    }
    text.push_back(std::move(line));
  }
  std::vector<size_t> width(t.columns.size(), 0);
  for (const auto& line : text)
    for (size_t i = 0; i < line.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], Width(line[i]));
  std::string out;
  for (const auto& line : text) {
    std::string s;
    for (size_t i = 0; i < line.size() && i < width.size(); ++i) {
      s += line[i];
      if (i + 1 < line.size()) s += std::string(width[i] - Width(line[i]) + 2, ' ');
    }
    out += s + "\n";
  }
  return out;
}

std::string Render(const TidyTable& t, const std::string& output) {
  if (output == "csv") return RenderCsv(t);
  if (output == "json") return RenderJsonLines(t);
  if (output == "table") return RenderAligned(t);
  return "";
}

}  // namespace codl::experiment
