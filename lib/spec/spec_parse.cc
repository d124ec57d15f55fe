// ParseExperiment: YAML text -> validated ExperimentSpec. Every rejection names FILE:LINE:COL
// (1-based) of the offending key or value, then the field's path ("antagonists[0].levels[1]").
// The first error found wins: validation stops there (an internal exception unwinds to the top).
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <random>
#include <set>
#include <sstream>

#include "lib/common/cpu_list.h"
#include "lib/common/tunables.h"
#include "lib/common/units.h"
#include "lib/spec/progress_pattern.h"
#include "lib/spec/spec.h"
#include "lib/spec/spec_parse_internal.h"
#include "lib/spec/trial_metric.h"
#include "lib/yaml/typed.h"
#include "lib/yaml/yaml_reader.h"

namespace codl::experiment {
namespace {

constexpr int kMaxRepetitions = 1000;
constexpr double kMaxPlannedTrials = 100000;

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
using yaml::Unsigned64;

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

using parse_detail::ParseProgress;
using parse_detail::ValidEnvName;

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

// A level: a plain number in (0, 1], or "max" (its own intensity: open loop, no target).
Intensity ParseLevel(const YAML::Node& n, const std::string& path) {
  const char* what = "a number in (0, 1] or \"max\"";
  std::string s = ScalarOf(n, path, what);
  Intensity in;
  in.label = s;
  if (s == "max") {
    in.max = true;
    in.level = 1.0;
    return in;
  }
  yaml::RejectQuoted(n, path, what);  // "0.5" is a string, like everywhere else
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(begin, &end);
  bool plain = end != begin && *end == '\0' && errno == 0 && std::isfinite(v) &&
               s.find_first_of("xXnNiI") == std::string::npos;  // no hex, nan, inf
  if (!plain) Fail(n, path, "'" + s + "' is not a number in (0, 1] or \"max\"");
  if (!(v > 0 && v <= 1)) Fail(n, path, s + " is out of range (0, 1]");
  in.level = v;
  return in;
}

Intensity ParseRateIntensity(const YAML::Node& n, const std::string& path) {
  std::string s = ScalarOf(n, path, "a rate (e.g. 2GiB/s, 50kIOPS)");
  Result<Rate> r = ParseRate(s);
  if (!r.ok()) Fail(n, path, r.error());
  if (r->value <= 0) Fail(n, path, "'" + s + "' must be greater than 0");
  Intensity in;
  in.absolute = true;
  in.rate = r->value;
  in.label = s;
  return in;
}

// A workload antagonist: levels, rates, options and an injector do not apply (it runs as it
// runs); its one intensity is "run".
void ParseWorkloadAntagonist(const MapReader& m, const YAML::Node& n, const std::string& path,
                             const std::string& source_path, AntagonistSpec* a) {
  for (const char* key : {"injector", "options", "levels", "rates", "tolerance"}) {
    if (!m.Has(key)) continue;
    Fail(m.Key(key), m.PathOf(key),
         std::string(key) + " does not apply to a workload (a real command runs as it runs); " +
             (key[0] == 'l' || key[0] == 'r' || key[0] == 't'
                  ? "remove it, or use an injector antagonist to sweep intensities"
                  : "remove it"));
  }
  a->workload = parse_detail::ParseWorkload(m.Value("workload"), m.PathOf("workload"));
  a->injector = kWorkloadInjector;
  Intensity run;
  run.max = true;
  run.level = 1;
  run.label = kWorkloadRunLabel;
  a->intensities.push_back(run);
  if (m.Has("nodes")) {
    a->nodes = ParseNodes(m.Value("nodes"), m.PathOf("nodes"));
    a->nodes.specified = true;
  }
  a->placement = ParsePlacement(m, n, path, source_path);
}

AntagonistSpec ParseAntagonist(const YAML::Node& n, const std::string& path,
                               const NodeSelector& nodes, const ParseHooks& hooks,
                               const std::string& source_path) {
  MapReader m(n, path,
              {"name", "injector", "workload", "options", "levels", "rates", "nodes", "cpus",
               "numa", "tolerance"});
  AntagonistSpec a;
  a.nodes = nodes;
  a.name = NonEmptyString(m.Require("name"), m.PathOf("name"));
  if (!ValidName(a.name)) {
    Fail(m.Value("name"), m.PathOf("name"),
         "'" + a.name + "' must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'");
  }
  if (m.Has("workload")) {
    ParseWorkloadAntagonist(m, n, path, source_path, &a);
    return a;
  }
  if (!m.Has("injector")) {
    Fail(n, path, "missing required key 'injector' (or 'workload': a real command)");
  }
  a.injector = NonEmptyString(m.Require("injector"), m.PathOf("injector"));
  if (hooks.injector) {
    std::string msg = hooks.injector(a.injector);
    if (!msg.empty()) Fail(m.Value("injector"), m.PathOf("injector"), msg);
  }
  if (m.Has("options")) {
    const YAML::Node& opts = m.Value("options");
    const std::string opath = m.PathOf("options");
    if (!opts.IsMap()) Fail(opts, opath, std::string("expected a mapping, got ") + KindName(opts));
    for (const auto& kv : opts) {
      std::string k = NonEmptyString(kv.first, opath);
      if (a.options.count(k)) Fail(kv.first, opath, "duplicate key '" + k + "'");
      std::string v = ScalarOf(kv.second, Join(opath, k), "a scalar value");
      if (hooks.option) {
        std::string msg = hooks.option(a.injector, k, v);
        if (!msg.empty()) Fail(kv.second, Join(opath, k), msg);
      }
      a.options[k] = v;
    }
  }
  std::set<std::string> seen;  // canonical intensity labels, so no pairing key repeats
  auto add = [&](const YAML::Node& at, const std::string& p, Intensity in) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", in.level);
    std::string key = in.absolute ? "rate " + in.label
                      : in.max    ? std::string("level max")
                                  : std::string("level ") + buf;
    if (!seen.insert(key).second) Fail(at, p, "duplicate " + key);
    a.intensities.push_back(std::move(in));
  };
  for (const char* list : {"levels", "rates"}) {
    if (!m.Has(list)) continue;
    const YAML::Node& seq = m.Value(list);
    const std::string lpath = m.PathOf(list);
    yaml::List(seq, lpath);
    for (size_t i = 0; i < seq.size(); ++i) {
      std::string p = Index(lpath, i);
      add(seq[i], p, list[0] == 'l' ? ParseLevel(seq[i], p) : ParseRateIntensity(seq[i], p));
    }
  }
  if (m.Has("tolerance")) {
    a.tolerance =
        parse_detail::ParseTolerance(m.Value("tolerance"), m.PathOf("tolerance"), source_path);
  }
  // Checked by the caller once a top-level tolerance is applied (CheckIntensities).
  if (m.Has("nodes")) {
    a.nodes = ParseNodes(m.Value("nodes"), m.PathOf("nodes"));
    a.nodes.specified = true;  // else the runner colocates it with the victim's node
  }
  a.placement = ParsePlacement(m, n, path, source_path);
  return a;
}

void ParsePairings(const YAML::Node& n, ExperimentSpec* spec) {
  const std::string path = "pairings";
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "singles") spec->pairings = Pairings::kSingles;
    else if (s == "pairs") spec->pairings = Pairings::kPairs;
    else if (s == "all") spec->pairings = Pairings::kAll;
    else Fail(n, path, "'" + s + "' is not one of singles, pairs, all, or a list of name lists");
    return;
  }
  if (!n.IsSequence() || n.size() == 0) {
    Fail(n, path, "expected singles, pairs, all, or a non-empty list of antagonist-name lists");
  }
  spec->pairings = Pairings::kExplicit;
  std::set<std::set<std::string>> combos;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node& combo = n[i];
    const std::string cpath = Index(path, i);
    if (!combo.IsSequence() || combo.size() == 0) {
      Fail(combo, cpath, "expected a non-empty list of antagonist names, e.g. [storage, membw]");
    }
    std::vector<std::string> names;
    std::set<std::string> unique;
    for (size_t j = 0; j < combo.size(); ++j) {
      std::string name = NonEmptyString(combo[j], Index(cpath, j));
      bool known = false;
      for (const auto& a : spec->antagonists) known = known || a.name == name;
      if (!known) Fail(combo[j], Index(cpath, j), "unknown antagonist '" + name + "'");
      if (!unique.insert(name).second) {
        Fail(combo[j], Index(cpath, j), "antagonist '" + name + "' listed twice");
      }
      names.push_back(name);
    }
    if (!combos.insert(unique).second) Fail(combo, cpath, "duplicate combination");
    spec->explicit_pairings.push_back(std::move(names));
  }
}

void ParseOrder(const YAML::Node& n, ExperimentSpec* spec) {
  MapReader m(n, "order", {"randomize", "seed"});
  if (m.Has("randomize")) spec->randomize = Bool(m.Value("randomize"), m.PathOf("randomize"));
  if (m.Has("seed")) {
    spec->seed = Unsigned64(m.Value("seed"), m.PathOf("seed"));
    spec->seed_explicit = true;
  }
}

// "2%" -> 0.02; a bare number is already a fraction (0.02). Either must lie in (0, 1).
double HalfWidthFraction(const YAML::Node& n, const std::string& path) {
  const std::string text = ScalarOf(n, path, "a percentage such as 2%");
  const bool percent = !text.empty() && text.back() == '%';
  auto number = ParseNumber(percent ? text.substr(0, text.size() - 1) : text);
  if (!number.ok() || !std::isfinite(*number)) {
    Fail(n, path, "expected a percentage such as 2%, got '" + text + "'");
  }
  const double fraction = percent ? *number / 100 : *number;
  if (!(fraction > 0 && fraction < 1)) {
    Fail(n, path,
         "'" + text + "' is out of range (0, 100%)" +
             (percent ? "" : "; a bare number is a fraction: write 2% or 0.02 for two percent"));
  }
  return fraction;
}

// `repetitions: 5` (fixed) or `repetitions: {min, max, ci_halfwidth}` (adaptive: the plan holds
// max blocks, the controller stops early once the CIs are narrow enough).
void ParseRepetitions(const YAML::Node& n, ExperimentSpec* spec) {
  if (!n.IsMap()) {
    spec->repetitions = static_cast<int>(Integer(n, "repetitions", 1, kMaxRepetitions));
    return;
  }
  MapReader m(n, "repetitions", {"min", "max", "ci_halfwidth"});
  AdaptiveRepetitions& a = spec->adaptive;
  a.enabled = true;
  a.min = static_cast<int>(Integer(m.Require("min"), m.PathOf("min"), 1, kMaxRepetitions));
  a.max = static_cast<int>(Integer(m.Require("max"), m.PathOf("max"), 1, kMaxRepetitions));
  if (a.min > a.max) {
    Fail(m.Value("max"), m.PathOf("max"),
         std::to_string(a.max) + " is less than min " + std::to_string(a.min));
  }
  a.ci_halfwidth = HalfWidthFraction(m.Require("ci_halfwidth"), m.PathOf("ci_halfwidth"));
  spec->repetitions = a.max;
}

// No fixed default seed: every run of a file would otherwise share one order, and an effect of
// that order would look like an effect of the interference. The drawn seed is recorded.
uint64_t DrawSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

void ParseCalibration(const YAML::Node& n, ExperimentSpec* spec) {
  MapReader c(n, "calibration", {"duration", "max_age"});
  if (c.Has("duration")) {
    spec->calibration_s = Duration(c.Value("duration"), "calibration.duration", true);
  }
  if (c.Has("max_age")) {
    spec->calibration_max_age_s = Duration(c.Value("max_age"), "calibration.max_age", true);
  }
}

// antagonists (names unique), the experiment-wide tolerance for those without their own, and
// what each needs: levels, rates or a search; a crosstalk experiment's, no search.
void ParseAntagonists(const MapReader& m, const ParseHooks& hooks, const std::string& source_path,
                      ExperimentSpec* out) {
  ExperimentSpec& spec = *out;
  if (m.Has("antagonists")) {
    const YAML::Node& list = yaml::List(m.Value("antagonists"), "antagonists");
    for (size_t i = 0; i < list.size(); ++i) {
      AntagonistSpec a =
          ParseAntagonist(list[i], Index("antagonists", i), spec.victim.nodes, hooks, source_path);
      for (const auto& other : spec.antagonists) {
        if (other.name == a.name) {
          Fail(list[i]["name"], Index("antagonists", i) + ".name",
               "duplicate antagonist name '" + a.name + "'");
        }
      }
      spec.antagonists.push_back(std::move(a));
    }
  }
  if (m.Has("tolerance")) {
    // Every injector antagonist without its own (a workload has no level to search).
    const ToleranceSpec all =
        parse_detail::ParseTolerance(m.Value("tolerance"), "tolerance", source_path);
    for (auto& a : spec.antagonists) {
      if (!a.workload && !a.tolerance.enabled) a.tolerance = all;
    }
  }
  // With a tolerance search the search supplies the levels; without one, some must be listed.
  for (size_t i = 0; i < spec.antagonists.size(); ++i) {
    const auto& a = spec.antagonists[i];
    if (a.intensities.empty() && !a.tolerance.enabled) {
      Fail(m.Value("antagonists")[i], Index("antagonists", i),
           "needs a non-empty 'levels' or 'rates' list (or a 'tolerance' search)");
    }
  }
  if (spec.crosstalk_window_s > 0) {
    if (spec.antagonists.empty())
      Fail(m.Value("crosstalk"), "crosstalk", "needs antagonists: their footprints are measured");
    for (size_t i = 0; i < spec.antagonists.size(); ++i) {
      if (spec.antagonists[i].tolerance.enabled)
        Fail(m.Value("antagonists")[i], Index("antagonists", i),
             "a tolerance search needs a victim; a crosstalk experiment has none");
    }
  }
}

// settle, cooldown, calibration, warmup_trials, min_antagonist_samples, agent_grace, lease.
void ParseTimings(const MapReader& m, ExperimentSpec* out) {
  ExperimentSpec& spec = *out;
  if (m.Has("settle")) spec.settle_s = Duration(m.Value("settle"), "settle", false);
  if (m.Has("cooldown")) spec.cooldown_s = Duration(m.Value("cooldown"), "cooldown", false);
  if (m.Has("calibration")) ParseCalibration(m.Value("calibration"), &spec);
  if (m.Has("warmup_trials")) {
    spec.warmup_trials =
        static_cast<int>(Integer(m.Value("warmup_trials"), "warmup_trials", 0, 100));
  }
  if (m.Has("min_antagonist_samples")) {
    spec.min_antagonist_samples = static_cast<int>(
        Integer(m.Value("min_antagonist_samples"), "min_antagonist_samples", 0, 10000));
  }
  if (m.Has("agent_grace")) {
    spec.agent_grace_s = Duration(m.Value("agent_grace"), "agent_grace", false);
    if (spec.agent_grace_s > 24 * 3600) {
      Fail(m.Value("agent_grace"), "agent_grace", "must be at most 24h (0 … 24h)");
    }
  }
  if (m.Has("lease")) spec.lease_s = Duration(m.Value("lease"), "lease", true);
  // Agents refuse leases under 1 s (security issue, item 3): say so at submit, not per trial.
  if (m.Has("lease") && spec.lease_s < tunables::kMinLeaseS) {
    Fail(m.Value("lease"), "lease",
         "must be at least " + tunables::DurationFlagText(tunables::kMinLeaseS));
  }
}

ExperimentSpec ParseRoot(const YAML::Node& root, const std::string& source_path,
                         const ParseHooks& hooks) {
  if (!root.IsDefined() || root.IsNull()) {
    Fail(YAML::Mark(), "", "empty document: expected a mapping with at least name and victim");
  }
  if (!root.IsMap()) {
    Fail(root, "", std::string("the document must be a mapping, got ") + KindName(root));
  }
  MapReader m(root, "",
              {"name", "nodes", "victim", "antagonists", "pairings", "repetitions", "order",
               "settle", "cooldown", "calibration", "lease", "warmup_trials",
               "min_antagonist_samples", "agent_grace", "tolerance", "crosstalk"});
  ExperimentSpec spec;
  spec.source_path = source_path;
  spec.name = NonEmptyString(m.Require("name"), "name");
  if (m.Has("nodes")) spec.nodes = ParseNodes(m.Value("nodes"), "nodes");
  if (m.Has("crosstalk"))
    spec.crosstalk_window_s = parse_detail::ParseCrosstalkWindow(m.Value("crosstalk"), "crosstalk");
  if (spec.crosstalk_window_s > 0) {
    if (m.Has("victim")) {
      Fail(m.Key("victim"), "victim",
           "a crosstalk experiment has no victim: each antagonist runs alone over an idle "
           "window (drop victim, or crosstalk: false)");
    }
    spec.victim = parse_detail::CrosstalkIdleVictim(spec.crosstalk_window_s, spec.nodes);
  } else {
    spec.victim = ParseVictim(m.Require("victim"), "victim", spec.nodes, source_path);
  }
  ParseAntagonists(m, hooks, source_path, &spec);
  if (m.Has("pairings")) ParsePairings(m.Value("pairings"), &spec);
  if (m.Has("repetitions")) ParseRepetitions(m.Value("repetitions"), &spec);
  spec.seed = DrawSeed();
  if (m.Has("order")) ParseOrder(m.Value("order"), &spec);
  ParseTimings(m, &spec);
  double trials = CountPlannedTrials(spec);
  if (trials > kMaxPlannedTrials) {
    char buf[128];
    std::snprintf(buf, sizeof buf,
                  "the plan has %.0f trials (limit %.0f); use fewer antagonists, "
                  "intensities or repetitions, or explicit pairings",
                  trials, kMaxPlannedTrials);
    if (m.Has("pairings")) Fail(m.Value("pairings"), "pairings", buf);
    Fail(root, "", buf);
  }
  return spec;
}

}  // namespace

namespace parse_detail {

bool ValidEnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

ProgressSpec ParseProgress(const YAML::Node& n, const std::string& path) {
  MapReader m(n, path, {"format", "field", "pattern"});
  ProgressSpec p;
  if (m.Has("format")) {
    std::string f = ScalarOf(m.Value("format"), m.PathOf("format"), "jsonl, regex or wall");
    if (f == "jsonl") p.format = ProgressSpec::Format::kJsonl;
    else if (f == "regex") p.format = ProgressSpec::Format::kRegex;
    else if (f == "wall") p.format = ProgressSpec::Format::kWall;
    else
      Fail(m.Value("format"), m.PathOf("format"), "'" + f + "' is not one of jsonl, regex, wall");
  }
  if (m.Has("field")) {
    if (p.format != ProgressSpec::Format::kJsonl) {
      Fail(m.Key("field"), m.PathOf("field"), "only used with format: jsonl");
    }
    p.field = NonEmptyString(m.Value("field"), m.PathOf("field"));
  }
  if (m.Has("pattern")) {
    if (p.format != ProgressSpec::Format::kRegex) {
      Fail(m.Key("pattern"), m.PathOf("pattern"), "only used with format: regex");
    }
    p.pattern = NonEmptyString(m.Value("pattern"), m.PathOf("pattern"));
    if (auto re = CompileProgressPattern(p.pattern); !re.ok()) {
      Fail(m.Value("pattern"), m.PathOf("pattern"), re.error());
    }
  } else if (p.format == ProgressSpec::Format::kRegex) {
    Fail(n, path, "format: regex needs a pattern with one capture group");
  }
  return p;
}

}  // namespace parse_detail

Result<ExperimentSpec> ParseExperiment(std::string_view yaml_text, const std::string& source_path,
                                       const ParseHooks& hooks) {
  ExperimentSpec spec;
  Status s = yaml::ReadDocument(yaml_text, source_path, [&](const YAML::Node& root) {
    spec = ParseRoot(root, source_path, hooks);
  });
  if (!s.ok()) return s;
  return spec;
}

Result<ExperimentSpec> LoadExperimentFile(const std::string& path, const ParseHooks& hooks) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseExperiment(text.str(), path, hooks);
}

}  // namespace codl::experiment
