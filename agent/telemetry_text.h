// Small text and file helpers of the agent's telemetry (node_telemetry.cc and its parsers in
// node_telemetry_parse.cc): /proc and /sys files are read bounded, split and parsed without
// exceptions, and counters that go backwards read as 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace codl::agent::telemetry_text {

// Files under /proc and /sys are small; a larger one is not what we expect, and is not read.
inline constexpr size_t kTelemetryMaxFileBytes = 1 << 20;

// The file's text, or nullopt when it cannot be read or holds more than kTelemetryMaxFileBytes
// (lib/common/read_file.h).
std::optional<std::string> TelemetryReadFile(const std::string& path);
// `s` cut at every `sep` (empty pieces kept).
std::vector<std::string_view> TelemetrySplit(std::string_view s, char sep);
// Whitespace-separated fields of one line.
std::vector<std::string_view> TelemetryFields(std::string_view line);
// A whole field as an unsigned decimal (or 0x-hex when `base` is 0) number; nullopt otherwise.
std::optional<uint64_t> TelemetryNumber(std::string_view s, int base = 10);
// b - a for counters that may have wrapped or been reset (a device removed and re-added): a
// decrease is read as 0, never as a huge number.
int64_t TelemetryDelta(uint64_t a, uint64_t b);
// Appends `what` to the "; "-separated notes unless it is there already.
void TelemetryNote(std::string* notes, const std::string& what);
int64_t TelemetryClampBytes(uint64_t v);
// The names in `dir` (no dot files), sorted; none when it cannot be read.
std::vector<std::string> TelemetryListDir(const std::string& dir);
// `s` without surrounding blanks and trailing newlines.
std::string TelemetryTrim(std::string_view s);

}  // namespace codl::agent::telemetry_text
