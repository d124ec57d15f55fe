// The one place daemon logs are formatted (codl-agent, codl-controller, and the embedded pair
// in `codlctl run`): spdlog's default logger and gRPC's own messages alike.
//   --log-format text  spdlog's human line (the default)
//   --log-format json  one JSON object per line: {"ts":"2026-11-30T19:20:01.123Z",
//                      "level":"info","msg":"...","component":"codl-agent"}
// docs/configuration.md, "Logging".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl::daemon {

// The levels a daemon accepts (--log-level, config log_level): debug | info | warn | error.
bool ValidLogLevel(std::string_view level);
// The formats (--log-format, config log_format): text | json.
bool ValidLogFormat(std::string_view format);

// Sets the default logger's level and format; `component` names the process in JSON lines.
// Also routes gRPC's own log messages through it (so a JSON log stays JSON). Errors name the
// bad value.
Status ConfigureLogging(const std::string& component, const std::string& level,
                        const std::string& format);

// One JSON log line (no newline): ts as RFC 3339 UTC with milliseconds.
std::string JsonLogLine(int64_t unix_ms, std::string_view level, std::string_view msg,
                        std::string_view component);

}  // namespace codl::daemon
