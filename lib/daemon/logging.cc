#include "lib/daemon/logging.h"

#include <grpc/support/log.h>

#include <chrono>
#include <ctime>
#include <memory>

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "lib/common/json_line.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::daemon {
namespace {

// spdlog's level names, except "warning" spelled as the flag spells it.
std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "off";
  }
}

class JsonFormatter final : public spdlog::formatter {
 public:
  explicit JsonFormatter(std::string component) : component_(std::move(component)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    const std::string line =
        JsonLogLine(ms, LevelName(msg.level),
                    std::string_view(msg.payload.data(), msg.payload.size()), component_) +
        "\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>(component_);
  }

 private:
  std::string component_;
};

// Text lines: spdlog's default pattern, with the message's control characters escaped
// (TerminalSafe): a name or a victim's stderr holding CR/LF cannot add a forged line to the log,
// nor escape sequences reach whoever tails it. The one escaping rule for text logs.
class TextFormatter final : public spdlog::formatter {
 public:
  TextFormatter() : inner_(std::make_unique<spdlog::pattern_formatter>()) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string safe = TerminalSafe(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(safe.data(), safe.size());
    inner_->format(copy, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextFormatter>();
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

// gRPC's messages (connection errors, ...) in the daemon's own log, at their severity.
void GrpcToSpdlog(gpr_log_func_args* args) {
  const auto level = args->severity == GPR_LOG_SEVERITY_ERROR  ? spdlog::level::err
                     : args->severity == GPR_LOG_SEVERITY_INFO ? spdlog::level::info
                                                               : spdlog::level::debug;
  spdlog::log(level, "grpc: {} ({}:{})", args->message, args->file, args->line);
}

}  // namespace

bool ValidLogLevel(std::string_view level) {
  return level == "debug" || level == "info" || level == "warn" || level == "error";
}

bool ValidLogFormat(std::string_view format) { return format == "text" || format == "json"; }

Status ConfigureLogging(const std::string& component, const std::string& level,
                        const std::string& format) {
  if (!ValidLogLevel(level))
    return InvalidArgument("log level '" + level + "': expected debug, info, warn or error");
  if (!ValidLogFormat(format))
    return InvalidArgument("log format '" + format + "': expected text or json");
  spdlog::set_level(spdlog::level::from_str(level));
  if (format == "json") spdlog::set_formatter(std::make_unique<JsonFormatter>(component));
  else spdlog::set_formatter(std::make_unique<TextFormatter>());
  gpr_set_log_function(GrpcToSpdlog);
  gpr_set_log_verbosity(level == "debug" ? GPR_LOG_SEVERITY_DEBUG : GPR_LOG_SEVERITY_ERROR);
  return Status::Ok();
}

std::string JsonLogLine(int64_t unix_ms, std::string_view level, std::string_view msg,
                        std::string_view component) {
  JsonLine j;
  j.Add("ts", FormatUtcMs(unix_ms)).Add("level", level).Add("msg", msg).Add("component", component);
  return j.str();
}

}  // namespace codl::daemon
