// The victim's `progress: {format: regex, pattern: …}`: one compiler for the controller (which
// validates the experiment file) and the agent (which matches every line the victim prints).
// RE2, not std::regex: matching is linear in the line, so no pattern or line can exhaust the
// stack or the CPU of a daemon (std::regex recursed and crashed on a 40 KB input).
#pragma once

#include <memory>
#include <string>

#include <re2/re2.h>

#include "lib/common/result.h"

namespace codl::experiment {

inline constexpr size_t kMaxProgressPatternBytes = 1024;

// A compiled pattern with at least one capture group (the metric is group 1), or an error that
// says what is wrong: too long, not valid RE2 syntax (no backreferences or lookaround), too
// large once compiled, or no capture group.
Result<std::shared_ptr<const re2::RE2>> CompileProgressPattern(const std::string& pattern);

}  // namespace codl::experiment
