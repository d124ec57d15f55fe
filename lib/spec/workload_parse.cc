// antagonists[].workload: a real command as the neighbour (docs/experiment-format.md,
// "Workload antagonists"), `tolerance` (its "Tolerance search") and `crosstalk` (its
// "Cross-talk"). Split from spec_parse.cc, which calls them.
#include <cstdio>

#include "lib/spec/spec_parse_internal.h"
#include "lib/spec/trial_metric.h"
#include "lib/yaml/typed.h"
#include "lib/yaml/yaml_reader.h"

namespace codl::experiment::parse_detail {

WorkloadSpec ParseWorkload(const YAML::Node& n, const std::string& path) {
  yaml::MapReader m(n, path,
                    {"command", "env", "workdir", "progress", "metric", "warmup_steps", "settle"});
  WorkloadSpec w;
  const YAML::Node& cmd = m.Require("command");
  w.command = yaml::StringList(cmd, m.PathOf("command"), "a list of strings (argv)");
  if (w.command.empty()) yaml::Fail(cmd, m.PathOf("command"), "must not be empty");
  if (w.command[0].empty()) {
    yaml::Fail(cmd[0], yaml::Index(m.PathOf("command"), 0), "must not be empty");
  }
  if (m.Has("env")) {
    w.env = yaml::StringMap(m.Value("env"), m.PathOf("env"), "a mapping", [](const std::string& k) {
      return ValidEnvName(k) ? std::string() : "'" + k + "' is not a valid variable name";
    });
  }
  if (m.Has("workdir")) w.workdir = yaml::NonEmptyString(m.Value("workdir"), m.PathOf("workdir"));
  if (m.Has("progress")) w.progress = ParseProgress(m.Value("progress"), m.PathOf("progress"));
  if (w.progress.format == ProgressSpec::Format::kWall) {
    yaml::Fail(m.Value("progress"), m.PathOf("progress"),
               "a workload runs until it is stopped, so it has no wall time: it must report "
               "steps (format: jsonl or regex)");
  }
  if (m.Has("metric")) {
    const char* allowed = "elapsed, mean (seconds per step) or throughput (steps per second)";
    const std::string name = yaml::ScalarOf(m.Value("metric"), m.PathOf("metric"), allowed);
    auto metric = ParseTrialMetric(name);
    using Kind = TrialMetric::Kind;
    if (!metric.ok() || (metric->kind != Kind::kElapsed && metric->kind != Kind::kMean &&
                         metric->kind != Kind::kThroughput)) {
      yaml::Fail(m.Value("metric"), m.PathOf("metric"),
                 "'" + name + "' is not a workload metric; allowed: " + allowed);
    }
    w.metric = *metric;
  }
  if (m.Has("warmup_steps")) {
    w.warmup_steps = static_cast<int>(
        yaml::Integer(m.Value("warmup_steps"), m.PathOf("warmup_steps"), 0, 1000000));
  }
  if (m.Has("settle")) {
    w.settle_timeout_s = yaml::Duration(m.Value("settle"), m.PathOf("settle"), true);
  }
  return w;
}

ToleranceSpec ParseTolerance(const YAML::Node& n, const std::string& path,
                             const std::string& source_path) {
  yaml::MapReader m(n, path, {"slowdown", "resolution", "max_trials"});
  ToleranceSpec t;
  t.enabled = true;
  const YAML::Node& slowdown = m.Require("slowdown");
  t.slowdown = yaml::Number(slowdown, m.PathOf("slowdown"));
  if (!(t.slowdown > 1) || t.slowdown > 100) {
    yaml::Fail(slowdown, m.PathOf("slowdown"),
               yaml::ScalarOf(slowdown, m.PathOf("slowdown"), "a number") +
                   " is out of range (1, 100]: the slowdown the victim tolerates, e.g. 1.10");
  }
  if (m.Has("resolution")) {
    const YAML::Node& r = m.Value("resolution");
    t.resolution = yaml::Number(r, m.PathOf("resolution"));
    if (!(t.resolution >= 0.001 && t.resolution < 1)) {
      yaml::Fail(r, m.PathOf("resolution"),
                 yaml::ScalarOf(r, m.PathOf("resolution"), "a number") +
                     " is out of range [0.001, 1): how close, in level, the search stops");
    }
  }
  if (m.Has("max_trials")) {
    t.max_trials =
        static_cast<int>(yaml::Integer(m.Value("max_trials"), m.PathOf("max_trials"), 1, 10000));
  }
  const YAML::Mark mark = n.Mark();
  t.where = source_path + ":" + std::to_string(mark.line + 1) + ":" +
            std::to_string(mark.column + 1) + ": " + path;
  return t;
}

double ParseCrosstalkWindow(const YAML::Node& n, const std::string& path) {
  if (n.IsScalar()) return yaml::Bool(n, path) ? kDefaultCrosstalkWindowS : 0;
  yaml::MapReader m(n, path, {"window"});
  double window = kDefaultCrosstalkWindowS;
  if (m.Has("window")) {
    window = yaml::Duration(m.Value("window"), m.PathOf("window"), true);
    if (window < 1 || window > kMaxCrosstalkWindowS) {
      yaml::Fail(m.Value("window"), m.PathOf("window"),
                 "must be between 1s and 1h: the antagonists' 0.2 s samples need a second at "
                 "least");
    }
  }
  return window;
}

VictimSpec CrosstalkIdleVictim(double window_s, const NodeSelector& nodes) {
  VictimSpec v;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", window_s);
  v.command = {"sleep", seconds};
  v.progress.format = ProgressSpec::Format::kWall;
  v.progress.field.clear();
  v.timeout_s = window_s + 60;
  v.nodes = nodes;
  return v;
}

}  // namespace codl::experiment::parse_detail
