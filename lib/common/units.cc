#include "lib/common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace codl {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

namespace {

// Splits "1.5GiB" into 1.5 and "GiB". Fails on an empty or non-numeric leading part.
bool SplitNumber(std::string_view text, double* number, std::string* suffix) {
  text = TrimSpace(text);
  if (text.empty()) return false;
  std::string buf(text);
  const char* begin = buf.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(v)) return false;
  // strtod accepts "inf"/"nan"/hex: refuse anything that is not a plain decimal number.
  for (const char* p = begin; p < end; ++p) {
    if (!(std::isdigit(static_cast<unsigned char>(*p)) || *p == '.' || *p == '-' || *p == '+' ||
          *p == 'e' || *p == 'E')) {
      return false;
    }
  }
  *number = v;
  *suffix = std::string(TrimSpace(std::string_view(end)));
  return true;
}

// Multiplier for a size prefix: "", "k", "K", "Ki", "M", "Mi", ... Returns 0 if unknown.
double PrefixMultiplier(std::string_view p) {
  if (p.empty()) return 1;
  if (p == "k" || p == "K") return 1e3;
  if (p == "M") return 1e6;
  if (p == "G") return 1e9;
  if (p == "T") return 1e12;
  if (p == "Ki" || p == "ki") return 1024.0;
  if (p == "Mi") return 1024.0 * 1024;
  if (p == "Gi") return 1024.0 * 1024 * 1024;
  if (p == "Ti") return 1024.0 * 1024 * 1024 * 1024;
  return 0;
}

// Size suffix ("", "B", "KiB", "kB", "MB", "M", "Gi", ...) to a byte multiplier; 0 if unknown.
double SizeMultiplier(std::string_view suffix) {
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.remove_suffix(1);
  return PrefixMultiplier(suffix);
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  double v;
  std::string suffix;
  if (!SplitNumber(text, &v, &suffix)) {
    return Err("'" + std::string(text) + "' is not a size (examples: 4096, 4KiB, 1MiB, 2GB)");
  }
  double mult = SizeMultiplier(suffix);
  if (mult == 0) {
    return Err("'" + std::string(text) + "': unknown size unit '" + suffix +
               "' (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  }
  if (v < 0) return Err("size '" + std::string(text) + "' must not be negative");
  double bytes = std::round(v * mult);
  if (bytes > 1.8e19) return Err("size '" + std::string(text) + "' is too large");
  return static_cast<uint64_t>(bytes);
}

Result<double> ParseDuration(std::string_view text) {
  double v;
  std::string suffix;
  if (!SplitNumber(text, &v, &suffix)) {
    return Err("'" + std::string(text) + "' is not a duration (examples: 500ms, 30s, 2m, 1h)");
  }
  double mult;
  if (suffix.empty() || suffix == "s" || suffix == "sec") mult = 1;
  else if (suffix == "ms") mult = 1e-3;
  else if (suffix == "us") mult = 1e-6;
  else if (suffix == "ns") mult = 1e-9;
  else if (suffix == "m" || suffix == "min") mult = 60;
  else if (suffix == "h") mult = 3600;
  else {
    return Err("'" + std::string(text) + "': unknown duration unit '" + suffix +
               "' (use ns, us, ms, s, m, h)");
  }
  if (v < 0) return Err("duration '" + std::string(text) + "' must not be negative");
  return v * mult;
}

Result<Rate> ParseRate(std::string_view text) {
  double v;
  std::string suffix;
  if (!SplitNumber(text, &v, &suffix)) {
    return Err("'" + std::string(text) + "' is not a rate (examples: 2GiB/s, 500MB/s, 50kIOPS)");
  }
  if (v < 0) return Err("rate '" + std::string(text) + "' must not be negative");
  Rate rate;
  auto ends_with = [&](std::string_view s) {
    return suffix.size() >= s.size() && suffix.compare(suffix.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("IOPS") || ends_with("iops") || ends_with("ops/s")) {
    std::string prefix = suffix.substr(0, suffix.size() - (ends_with("ops/s") ? 5 : 4));
    double mult = PrefixMultiplier(std::string_view(prefix));
    if (mult == 0) return Err("'" + std::string(text) + "': unknown prefix '" + prefix + "'");
    rate.value = v * mult;
    rate.unit = RateUnit::kOpsPerSecond;
    return rate;
  }
  std::string size_part = suffix;
  if (ends_with("/s")) size_part = suffix.substr(0, suffix.size() - 2);
  else if (!suffix.empty()) {
    return Err("'" + std::string(text) +
               "': a rate needs '/s' or 'IOPS' (examples: 2GiB/s, 50kIOPS)");
  }
  double mult = SizeMultiplier(size_part);
  if (mult == 0) return Err("'" + std::string(text) + "': unknown unit '" + size_part + "'");
  rate.value = v * mult;
  rate.unit = RateUnit::kBytesPerSecond;
  return rate;
}

Result<double> ParseNumber(std::string_view text) {
  double v;
  std::string suffix;
  if (!SplitNumber(text, &v, &suffix)) return Err("'" + std::string(text) + "' is not a number");
  double mult = PrefixMultiplier(suffix);
  if (mult == 0) return Err("'" + std::string(text) + "': unknown suffix '" + suffix + "'");
  return v * mult;
}

namespace {
std::string Scaled(double v, const char* const* units, int n, double base, const char* tail) {
  int i = 0;
  double a = std::fabs(v);
  while (i + 1 < n && a >= base) {
    a /= base;
    v /= base;
    ++i;
  }
  char buf[64];
  // No prefix and a unit of its own ("0.41 core-s/s"): one space, not two.
  const bool bare = units[i][0] == '\0' && tail[0] == ' ';
  std::snprintf(buf, sizeof buf, bare ? "%.2f%s%s" : "%.2f %s%s", v, units[i], tail);
  return buf;
}
}  // namespace

std::string FormatSize(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return Scaled(bytes, kUnits, 5, 1024, "");
}

std::string FormatBytesPerSecond(double bps) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return Scaled(bps, kUnits, 5, 1024, "/s");
}

std::string FormatRate(double value, std::string_view unit) {
  if (unit == "bytes/s") return FormatBytesPerSecond(value);
  static const char* const kUnits[] = {"", "k", "M", "G", "T"};
  return Scaled(value, kUnits, 5, 1000, (" " + std::string(unit)).c_str());
}

std::string FormatDuration(double s) {
  char buf[64];
  if (s == 0) return "0 s";
  if (s >= 120) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  // The thresholds sit where the smaller unit would print 1000.0 (0.9999996 ms is "1.0 ms").
  else if (s >= 0.99995) std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 0.99995e-3) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

std::string FormatUtcMs(int64_t unix_ms) {
  int64_t secs = unix_ms / 1000;
  int64_t ms = unix_ms % 1000;
  if (ms < 0) {  // before 1970: floor, so the milliseconds stay 0..999
    ms += 1000;
    --secs;
  }
  const time_t t = static_cast<time_t>(secs);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[48];
  const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

}  // namespace codl
