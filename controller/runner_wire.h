// Helpers the experiment runner and its trial steps share: times and the victim's wire form.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "codl/v1/agent.pb.h"
#include "lib/common/clock.h"
#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::controller::runner {

inline int64_t NowMs(const Clock* c) { return c->UnixNanos() / 1'000'000; }

// A baseline whose victim ran cleanly: what a workload's solo run lasts as long as.
inline bool IsMeasuredBaseline(const TrialRecord& t) {
  return t.baseline && !t.solo && t.state == TrialState::kDone && t.wall_s > 0;
}

// "1.5 s": a duration in a message.
inline std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// "a, b, c": agent ids in a message.
inline std::string JoinNodes(const std::vector<std::string>& nodes) {
  std::string s;
  for (const auto& n : nodes) s += (s.empty() ? "" : ", ") + n;
  return s;
}
inline int64_t Nanos(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

inline v1::VictimSpec ToProto(const experiment::VictimSpec& v) {
  v1::VictimSpec p;
  for (const auto& a : v.command) p.add_command(a);
  for (const auto& [k, val] : v.env) (*p.mutable_env())[k] = val;
  p.set_workdir(v.workdir);
  p.set_warmup_steps(v.warmup_steps);
  p.set_timeout_s(v.timeout_s);
  p.set_trace_steps(v.trace_steps);
  p.set_cache_mode(v.cache.mode);
  for (const auto& path : v.cache.paths) p.add_cache_paths(path);
  auto* pr = p.mutable_progress();
  switch (v.progress.format) {
    case experiment::ProgressSpec::Format::kRegex: pr->set_format(v1::VictimProgress::REGEX); break;
    case experiment::ProgressSpec::Format::kWall: pr->set_format(v1::VictimProgress::WALL); break;
    default: pr->set_format(v1::VictimProgress::JSONL);
  }
  pr->set_field(v.progress.field);
  pr->set_pattern(v.progress.pattern);
  return p;
}

// Only sent when the YAML placed the child: an absent message means "anywhere" to the agent.
inline void SetPlacement(const experiment::PlacementSpec& s, v1::Placement* p) {
  p->set_cpus(s.cpus);
  p->set_numa(s.numa);
  p->set_where(s.where);
}

}  // namespace codl::controller::runner
