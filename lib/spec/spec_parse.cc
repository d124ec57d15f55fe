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
#include "lib/common/read_file.h"
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

using parse_detail::ParseNodes;
using parse_detail::ParsePlacement;
using parse_detail::ParseVictim;

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

// settle, cooldown, calibration, warmup_trials, min_antagonist_samples, agent_grace, retry,
// lease.
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
  if (m.Has("retry")) spec.retry = parse_detail::ParseRetry(m.Value("retry"), "retry");
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
               "min_antagonist_samples", "agent_grace", "tolerance", "crosstalk", "retry"});
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
  const std::optional<std::string> text = ReadFileText(path);
  if (!text) return InvalidArgument(path + ": cannot open: " + std::strerror(errno));
  return ParseExperiment(*text, path, hooks);
}

}  // namespace codl::experiment
