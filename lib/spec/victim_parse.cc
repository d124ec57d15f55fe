// The victim's part of the experiment parser (spec_parse.cc): victim (command, env, progress,
// metric, timeout, nodes, placement, distributed ranks, trace, cache) and node selectors.
// Errors name FILE:LINE:COL like the rest of the parser (yaml::YamlError).
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <string>
#include <vector>

#include "lib/common/cpu_list.h"
#include "lib/common/tunables.h"
#include "lib/common/units.h"
#include "lib/spec/progress_pattern.h"
#include "lib/spec/spec.h"
#include "lib/spec/spec_parse_internal.h"
#include "lib/spec/trial_metric.h"
#include "lib/yaml/typed.h"
#include "lib/yaml/yaml_reader.h"

namespace codl::experiment::parse_detail {
namespace {

using yaml::Bool;
using yaml::Duration;
using yaml::Fail;
using yaml::Index;
using yaml::Integer;
using yaml::Join;
using yaml::KindName;
using yaml::MapReader;
using yaml::NonEmptyString;
using yaml::ScalarOf;

}  // namespace

std::vector<std::string> HostList(const YAML::Node& n, const std::string& path) {
  if (yaml::List(n, path, "a list of hostnames").size() == 0) {
    Fail(n, path, "the host list must not be empty");
  }
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string h = NonEmptyString(n[i], Index(path, i));
    if (!seen.insert(h).second) Fail(n[i], Index(path, i), "duplicate host '" + h + "'");
    hosts.push_back(h);
  }
  return hosts;
}

NodeSelector ParseNodes(const YAML::Node& n, const std::string& path) {
  static const char* kHelp =
      "expected 'all', a list of hostnames, {labels: {k: v}}, {hosts: [..]} or {count: N}";
  NodeSelector sel;
  if (n.IsScalar()) {
    if (n.Scalar() != "all") Fail(n, path, "'" + n.Scalar() + "': " + kHelp);
    return sel;
  }
  if (n.IsSequence()) {
    sel.kind = NodeSelector::Kind::kHosts;
    sel.hosts = HostList(n, path);
    return sel;
  }
  if (!n.IsMap()) Fail(n, path, std::string(kHelp) + ", got " + KindName(n));
  MapReader m(n, path, {"labels", "hosts", "count"});
  if (n.size() != 1) Fail(n, path, "a node selector takes exactly one of labels, hosts, count");
  if (m.Has("labels")) {
    sel.kind = NodeSelector::Kind::kLabels;
    const char* what = "a non-empty mapping of label: value";
    const YAML::Node& labels = m.Value("labels");
    sel.labels = yaml::StringMap(labels, m.PathOf("labels"), what);
    if (sel.labels.empty()) Fail(labels, m.PathOf("labels"), std::string("expected ") + what);
  } else if (m.Has("hosts")) {
    sel.kind = NodeSelector::Kind::kHosts;
    sel.hosts = HostList(m.Value("hosts"), m.PathOf("hosts"));
  } else {
    sel.kind = NodeSelector::Kind::kCount;
    sel.count = static_cast<int>(Integer(m.Value("count"), m.PathOf("count"), 1, 100000));
  }
  return sel;
}

// The agent applies a placement through a cpu_set_t: CPUs up to CPU_SETSIZE - 1.
constexpr int kMaxPlacementCpu = 1023;

// cpus: and numa: of a victim or an antagonist (syntax only: the agent checks its node).
PlacementSpec ParsePlacement(const MapReader& m, const YAML::Node& n, const std::string& path,
                             const std::string& source_path) {
  PlacementSpec p;
  if (m.Has("cpus")) {
    const YAML::Node& v = m.Value("cpus");
    auto cpus = ParseCpuList(ScalarOf(v, m.PathOf("cpus"), "a CPU list such as \"0-3,6\""),
                             kMaxPlacementCpu);
    if (!cpus.ok()) Fail(v, m.PathOf("cpus"), cpus.error());
    p.cpus = FormatCpuList(*cpus);
  }
  if (m.Has("numa")) {
    p.numa = static_cast<int>(Integer(m.Value("numa"), m.PathOf("numa"), 0, kMaxPlacementCpu));
  }
  const YAML::Mark mark = n.Mark();
  p.where = source_path + ":" + std::to_string(mark.line + 1) + ":" +
            std::to_string(mark.column + 1) + ": " + path;
  return p;
}

// victim.distributed and victim.master_port. A selector that names fewer than 2 nodes is
// refused here; one that matches by label (or `all`) is checked when the controller places it.
void ParseDistributed(const MapReader& m, VictimSpec* v) {
  if (m.Has("distributed")) v->distributed = Bool(m.Value("distributed"), m.PathOf("distributed"));
  if (m.Has("master_port")) {
    if (!v->distributed) {
      Fail(m.Key("master_port"), m.PathOf("master_port"), "only used with distributed: true");
    }
    v->master_port =
        static_cast<int>(Integer(m.Value("master_port"), m.PathOf("master_port"), 1024, 65535));
  }
  if (!v->distributed) return;
  using K = NodeSelector::Kind;
  const size_t named = v->nodes.kind == K::kHosts   ? v->nodes.hosts.size()
                       : v->nodes.kind == K::kCount ? static_cast<size_t>(v->nodes.count)
                                                    : 2;
  if (named < 2) {
    const bool own = m.Has("nodes");
    Fail(own ? m.Value("nodes") : m.Value("distributed"),
         own ? m.PathOf("nodes") : m.PathOf("distributed"),
         "distributed: true needs at least 2 nodes (one rank per node); " +
             std::string(own ? "victim.nodes" : "the experiment's nodes") + " selects " +
             DescribeNodeSelector(v->nodes));
  }
  if (!m.Has("env")) return;
  const YAML::Node& env = m.Value("env");
  for (auto it = env.begin(); it != env.end(); ++it) {
    const std::string name = it->first.Scalar();
    if (IsDistributedVariable(name)) {
      Fail(it->first, Join(m.PathOf("env"), name),
           "set by the controller for each rank of a distributed victim; remove it");
    }
  }
}

CacheSpec ParseCache(const YAML::Node& n, const std::string& path) {
  MapReader m(n, path, {"mode", "paths"});
  CacheSpec c;
  if (m.Has("mode")) {
    c.mode = ScalarOf(m.Value("mode"), m.PathOf("mode"), "cold, warm or as-is");
    if (c.mode != "cold" && c.mode != "warm" && c.mode != "as-is") {
      Fail(m.Value("mode"), m.PathOf("mode"), "'" + c.mode + "' is not cold, warm or as-is");
    }
  }
  if (m.Has("paths")) {
    const YAML::Node& paths = m.Value("paths");
    c.paths = yaml::StringList(paths, m.PathOf("paths"), "a list of absolute paths");
    for (size_t i = 0; i < c.paths.size(); ++i) {
      if (c.paths[i].empty() || c.paths[i][0] != '/') {
        Fail(paths[i], Index(m.PathOf("paths"), i), "'" + c.paths[i] + "' is not an absolute path");
      }
    }
  }
  if (c.mode != "as-is" && c.paths.empty()) {
    Fail(n, path, "mode " + c.mode + " needs paths: the directories or files the victim reads");
  }
  return c;
}

VictimSpec ParseVictim(const YAML::Node& n, const std::string& path, const NodeSelector& nodes,
                       const std::string& source_path) {
  MapReader m(n, path,
              {"command", "env", "workdir", "progress", "warmup_steps", "timeout", "nodes",
               "metric", "cpus", "numa", "distributed", "master_port", "trace", "cache"});
  VictimSpec v;
  v.nodes = nodes;
  const YAML::Node& cmd = m.Require("command");
  v.command = yaml::StringList(cmd, m.PathOf("command"), "a list of strings (argv)");
  if (v.command.empty()) Fail(cmd, m.PathOf("command"), "must not be empty");
  if (v.command[0].empty()) Fail(cmd[0], Index(m.PathOf("command"), 0), "must not be empty");
  if (m.Has("env")) {
    v.env = yaml::StringMap(m.Value("env"), m.PathOf("env"), "a mapping", [](const std::string& k) {
      return ValidEnvName(k) ? std::string() : "'" + k + "' is not a valid variable name";
    });
  }
  if (m.Has("workdir")) v.workdir = NonEmptyString(m.Value("workdir"), m.PathOf("workdir"));
  if (m.Has("progress")) v.progress = ParseProgress(m.Value("progress"), m.PathOf("progress"));
  if (m.Has("warmup_steps")) {
    v.warmup_steps =
        static_cast<int>(Integer(m.Value("warmup_steps"), m.PathOf("warmup_steps"), 0, 1000000));
  }
  if (m.Has("metric")) {
    const std::string s = ScalarOf(m.Value("metric"), m.PathOf("metric"), kAllowedMetrics);
    auto metric = ParseTrialMetric(s);
    if (!metric.ok()) Fail(m.Value("metric"), m.PathOf("metric"), metric.error());
    v.metric = *metric;
  }
  if (m.Has("timeout")) v.timeout_s = Duration(m.Value("timeout"), m.PathOf("timeout"), true);
  if (m.Has("nodes")) v.nodes = ParseNodes(m.Value("nodes"), m.PathOf("nodes"));
  if (m.Has("trace")) {
    MapReader t(m.Value("trace"), m.PathOf("trace"), {"steps"});
    v.trace_steps =
        static_cast<int>(Integer(t.Require("steps"), t.PathOf("steps"), 1, kMaxTraceSteps));
  }
  if (m.Has("cache")) v.cache = ParseCache(m.Value("cache"), m.PathOf("cache"));
  v.placement = ParsePlacement(m, n, path, source_path);
  ParseDistributed(m, &v);
  return v;
}

}  // namespace codl::experiment::parse_detail
