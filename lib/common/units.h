// One parser for every unit a user types: sizes ("4KiB", "1MiB", "1GB"), rates ("2GiB/s",
// "50kIOPS", "300MB/s"), durations ("500ms", "30s", "2m"). Used by YAML validation, injector
// option tables and the CLIs, so "1MiB" means the same thing everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// `s` without leading and trailing white space (what every parser here ignores around a value).
std::string_view TrimSpace(std::string_view s);

// Decimal prefixes (k, M, G, T) are powers of 1000, binary ones (Ki, Mi, Gi, Ti) powers of 1024.
// A bare number is bytes. Fractions are allowed ("1.5GiB") and rounded to whole bytes.
Result<uint64_t> ParseSize(std::string_view text);

// ns, us, ms, s, m, h; a bare number is seconds. Returns seconds.
Result<double> ParseDuration(std::string_view text);

enum class RateUnit { kBytesPerSecond, kOpsPerSecond };

struct Rate {
  double value = 0;  // in base units: bytes/s or ops/s
  RateUnit unit = RateUnit::kBytesPerSecond;
};

// "<size>/s" is bytes per second ("2GiB/s", "500MB/s"); "<n>IOPS" with optional k/M/G prefix
// ("50kIOPS") or "<n>ops/s" is operations per second. A bare number is taken as bytes/s.
Result<Rate> ParseRate(std::string_view text);

// Plain number with optional decimal/binary multiplier, e.g. level "0.5" or count "2k".
Result<double> ParseNumber(std::string_view text);

// Human formatting, for tables and live lines: "1.50 GiB", "2.00 GiB/s", "1.2 s", "250 ms".
std::string FormatSize(double bytes);
std::string FormatBytesPerSecond(double bytes_per_second);
std::string FormatRate(double value, std::string_view unit);  // unit is "bytes/s", "IOPS", ...
std::string FormatDuration(double seconds);
// ISO 8601 / RFC 3339 in UTC with milliseconds: "2026-11-30T19:20:01.123Z" (log lines, the
// timestamps of terminal tables; exports keep the `_unix_ms` numbers).
std::string FormatUtcMs(int64_t unix_ms);

}  // namespace codl
