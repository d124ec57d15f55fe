#include "agent/telemetry_text.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "lib/common/read_file.h"
#include "lib/common/units.h"

namespace codl::agent::telemetry_text {

std::optional<std::string> TelemetryReadFile(const std::string& path) {
  return ReadFileText(path, kTelemetryMaxFileBytes);
}

std::vector<std::string_view> TelemetrySplit(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(sep, at);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Whitespace-separated fields of one line.
std::vector<std::string_view> TelemetryFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A whole field as an unsigned decimal (or 0x-hex when `base` is 0) number; nullopt otherwise.
std::optional<uint64_t> TelemetryNumber(std::string_view s, int base) {
  if (base == 0) {
    base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      base = 16;
    }
  }
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// b - a for counters that may have wrapped or been reset (a device removed and re-added): a
// decrease is read as 0, never as a huge number.
int64_t TelemetryDelta(uint64_t a, uint64_t b) {
  if (b < a) return 0;
  const uint64_t d = b - a;
  return d > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(d);
}

void TelemetryNote(std::string* notes, const std::string& what) {
  if (notes->find(what) != std::string::npos) return;
  *notes += (notes->empty() ? "" : "; ") + what;
}

int64_t TelemetryClampBytes(uint64_t v) {
  return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
}

std::vector<std::string> TelemetryListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string TelemetryTrim(std::string_view s) { return std::string(TrimSpace(s)); }

}  // namespace codl::agent::telemetry_text
