// codlctl profile: a victim's interference fingerprint in one command. The victim of FILE runs
// against every injector its node supports (or --injectors), each alone at a coarse sweep of
// levels plus a tolerance search, as one experiment (NAME-profile) stored like any other; the
// profile table (lib/analysis/profile.h) closes the run, and `--show ID` prints it again.
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "agent/agent.h"
#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/injector_choice.h"
#include "codlctl/results_output.h"
#include "injectors/core/registry.h"
#include "lib/common/read_file.h"
#include "lib/common/utf8.h"
#include "lib/spec/node_selector_match.h"

namespace codl::cli {
namespace {

int ProfileFail(const std::string& message, int code = kExitBadInput) {
  fprintf(stderr, "codlctl profile: %s\n", TerminalSafe(message).c_str());
  return code;
}

// FILE's experiment with its antagonists, pairings and tolerance replaced by one antagonist per
// injector (named after it, with the options FILE gave that injector): the sweep's levels and a
// tolerance search each; singles only.
Result<std::string> ProfileYaml(const std::string& text, const std::vector<std::string>& names,
                                const ProfileCliOptions& o) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Err(std::string("cannot read the file: ") + e.what());
  }
  // An injector's options in FILE (its first antagonist of that injector) carry over.
  std::map<std::string, YAML::Node> options = InjectorOptionsIn(root);
  for (const char* key : {"antagonists", "pairings", "tolerance"}) root.remove(key);
  root["name"] = root["name"].as<std::string>() + "-profile";
  if (o.repetitions > 0) root["repetitions"] = o.repetitions;
  YAML::Node list(YAML::NodeType::Sequence);
  for (const std::string& n : names) {
    YAML::Node a;
    a["name"] = n;
    a["injector"] = n;
    if (options.count(n)) a["options"] = options[n];
    YAML::Node levels(YAML::NodeType::Sequence);
    for (const std::string& l : o.levels) levels.push_back(l);
    levels.SetStyle(YAML::EmitterStyle::Flow);
    a["levels"] = levels;
    YAML::Node t;
    t["slowdown"] = o.slowdown;
    t["resolution"] = o.resolution;
    t["max_trials"] = o.max_trials;
    t.SetStyle(YAML::EmitterStyle::Flow);
    a["tolerance"] = t;
    list.push_back(a);
  }
  root["antagonists"] = list;
  root["pairings"] = "singles";
  YAML::Emitter out;
  out << root;
  if (!out.good()) return Err("cannot write the profile's YAML: " + out.GetLastError());
  return std::string("# codlctl profile of this file's victim\n") + out.c_str() + "\n";
}

// The flags' own ranges, said before anything starts.
Status CheckProfileFlags(const ProfileCliOptions& o) {
  if (o.run.output != "table" && o.run.output != "json" && o.run.output != "csv")
    return Err("-o '" + o.run.output + "': expected table, json or csv");
  if (!(o.slowdown > 1) || o.slowdown > 100)
    return Err("--slowdown " + std::to_string(o.slowdown) + " is out of range (1, 100]");
  if (!(o.resolution >= 0.001 && o.resolution < 1))
    return Err("--resolution " + std::to_string(o.resolution) + " is out of range [0.001, 1)");
  if (o.max_trials < 1 || o.max_trials > 10000)
    return Err("--max-trials " + std::to_string(o.max_trials) + " is out of range 1 … 10000");
  if (o.repetitions < 0 || o.repetitions > 1000)
    return Err("--repetitions " + std::to_string(o.repetitions) + " is out of range 1 … 1000");
  return CheckLevelsAndInjectors(o.levels, o.injectors, "0.25,0.5,max");
}

}  // namespace

void AddProfileOptions(CLI::App* cmd, ProfileCliOptions* o) {
  cmd->add_option("file", o->run.file,
                  "experiment YAML whose victim to profile (its antagonists "
                  "are replaced)");
  cmd->add_option("--show", o->show,
                  "print the profile of a stored experiment (ID or 'latest', from --db or the "
                  "controller) and run nothing");
  cmd->add_option("--injectors", o->injectors,
                  "injectors to profile against, comma-separated (default: every one the "
                  "victim's node reports available, noop excepted)")
      ->delimiter(',');
  cmd->add_option("--levels", o->levels,
                  "the coarse sweep: levels in (0, 1] or max, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--slowdown", o->slowdown,
                  "the tolerance search's threshold: the slowdown the victim tolerates, (1, 100]")
      ->capture_default_str();
  cmd->add_option("--resolution", o->resolution,
                  "stop each search when its two levels are this close, [0.001, 1)")
      ->capture_default_str();
  cmd->add_option("--max-trials", o->max_trials,
                  "trials each search may add after the sweep, 1 … 10000")
      ->capture_default_str();
  cmd->add_option("--repetitions", o->repetitions,
                  "repetitions of the sweep (default: the file's `repetitions`)");
  cmd->add_flag("--plan", o->plan,
                "print the profile's trials and estimated duration, then stop (nothing runs)");
  AddRunOptions(cmd, &o->run);
  cmd->footer(
      "The victim of FILE runs against each injector alone: a sweep of --levels (fractions of\n"
      "the injector's calibrated peak on the node) then a tolerance search (docs/experiment-\n"
      "format.md, \"Tolerance search\") for the highest level whose slowdown's CI stays under\n"
      "--slowdown. Options FILE gives an injector (its first antagonist of that injector) carry\n"
      "over. All of it is one experiment, NAME-profile, stored in --db (or the\n"
      "controller's database) like any other. Before it runs, the plan and its estimated\n"
      "duration are printed; the profile table closes the run: one row per resource, its\n"
      "curve, the tolerated and breaking levels, and the slowdown at the peak. -o json|csv\n"
      "print that table as JSON or CSV (docs/results.md, \"Profile\").\n\n"
      "  codlctl profile experiments/quickstart.yaml --plan\n"
      "  codlctl profile experiments/quickstart.yaml --injectors memcpy,cpu --report p.html\n"
      "  codlctl profile --show latest --db codl-results.db -o json");
}

int CmdProfile(const GlobalOptions& g, const ProfileCliOptions& o) {
  if (!o.show.empty()) {
    if (!o.run.file.empty())
      return ProfileFail("give FILE (to run a profile) or --show ID, not both");
    return ShowStored(g, "profile", o.run.db, o.show, o.run.output, PrintProfile);
  }
  if (o.run.file.empty())
    return ProfileFail("give the experiment FILE whose victim to profile, or --show ID");
  if (Status s = CheckProfileFlags(o); !s.ok()) return ProfileFail(s.error());
  const std::optional<std::string> read = ReadFileText(o.run.file);
  if (!read) return ProfileFail(o.run.file + ": cannot read the file");
  const std::string& text = *read;
  auto spec = experiment::ParseExperiment(text, o.run.file, InjectorHooks());
  if (!spec.ok()) {
    fprintf(stderr, "%s\n", TerminalSafe(spec.error()).c_str());
    return kExitBadInput;
  }
  // The YAML to run, once the injectors are known; its plan printed first.
  auto build = [&](const std::vector<std::string>& names,
                   PlanDetail detail) -> Result<std::string> {
    auto yaml = ProfileYaml(text, names, o);
    if (!yaml.ok()) return yaml;
    auto profiled = experiment::ParseExperiment(*yaml, o.run.file, InjectorHooks());
    if (!profiled.ok())
      return Err("the profile's experiment does not validate: " + profiled.error());
    if (o.run.output == "table" || detail == PlanDetail::kTrials) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      printf("profile of %s's victim against: %s\n", TerminalSafe(o.run.file).c_str(),
             TerminalSafe(list).c_str());
      PrintPlan(*profiled, o.run.file, detail, o.run.db);
      fflush(stdout);
    }
    return yaml;
  };
  if (o.plan) {
    auto names = PlanInjectors(g, o.injectors, spec->victim.nodes);
    if (!names.ok())
      return ProfileFail(names.error(), names.code() == StatusCode::kUnavailable ? kExitUnreachable
                                                                                 : kExitBadInput);
    auto yaml = build(*names, PlanDetail::kTrials);
    return yaml.ok() ? kExitOk : ProfileFail(yaml.error());
  }
  RunOptions run = o.run;
  const std::string output = o.run.output;
  run.print = [output](ControllerClient* c, const std::string& id) {
    return PrintProfile(c, "", id, output, stdout);
  };
  return SubmitAndFollow(g, run, "profile", [&](ControllerClient* c) -> Result<std::string> {
    std::vector<std::string> names = o.injectors;
    if (names.empty()) {
      auto supported = NodeInjectors(c, spec->victim.nodes);
      if (!supported.ok()) return supported.status();
      names = *supported;
    }
    return build(names, PlanDetail::kSummary);
  });
}

}  // namespace codl::cli
