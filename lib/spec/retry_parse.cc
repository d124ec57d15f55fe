// `retry` (docs/experiment-format.md, "retry"): how often a trial whose attempt failed for an
// infrastructure reason runs again. Split from spec_parse.cc, which calls it.
#include "lib/spec/spec_parse_internal.h"
#include "lib/yaml/typed.h"
#include "lib/yaml/yaml_reader.h"

namespace codl::experiment::parse_detail {

RetryPolicy ParseRetry(const YAML::Node& n, const std::string& path) {
  RetryPolicy policy;
  if (!n.IsMap()) {
    yaml::Fail(
        n, path,
        std::string("expected a mapping {attempts: N, on: [KIND, ...]}, got ") + yaml::KindName(n));
  }
  yaml::MapReader m(n, path, {"attempts", "on"});
  if (m.Has("attempts")) {
    policy.attempts = static_cast<int>(
        yaml::Integer(m.Value("attempts"), m.PathOf("attempts"), 1, RetryPolicy::kMaxAttempts));
  }
  if (m.Has("on")) {
    const YAML::Node& list = yaml::List(m.Value("on"), m.PathOf("on"), "a list of failure kinds");
    policy.on.clear();
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = yaml::Index(m.PathOf("on"), i);
      const std::string name = yaml::ScalarOf(list[i], at, "a failure kind");
      FailureKind kind = FailureKind::kNone;
      if (!ParseFailureKind(name, &kind) || kind == FailureKind::kNone ||
          kind == FailureKind::kCancelled) {
        yaml::Fail(list[i], at,
                   "unknown failure kind '" + name + "' (known: " + FailureKindNames() + ")");
      }
      if (!policy.on.insert(kind).second) yaml::Fail(list[i], at, "'" + name + "' is listed twice");
    }
  }
  return policy;
}

}  // namespace codl::experiment::parse_detail
