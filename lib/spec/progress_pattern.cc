#include "lib/spec/progress_pattern.h"

namespace codl::experiment {

Result<std::shared_ptr<const re2::RE2>> CompileProgressPattern(const std::string& pattern) {
  if (pattern.size() > kMaxProgressPatternBytes) {
    return InvalidArgument("pattern is " + std::to_string(pattern.size()) + " bytes; at most " +
                           std::to_string(kMaxProgressPatternBytes) + " are allowed");
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);  // a compiled program over 1 MiB fails instead of growing
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok()) {
    return InvalidArgument("invalid regex: " + re->error() +
                           " (RE2 syntax: no backreferences or lookaround)");
  }
  if (re->NumberOfCapturingGroups() < 1) {
    return InvalidArgument("needs a capture group around the metric, e.g. 'step_time=([0-9.]+)'");
  }
  return re;
}

}  // namespace codl::experiment
