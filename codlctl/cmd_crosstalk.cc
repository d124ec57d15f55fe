// codlctl crosstalk: what each antagonist touches besides its own resource. Every injector the
// node supports (or --injectors) runs alone at each of --levels, with no victim, over an idle
// window; the agent's node telemetry over that window, less an idle baseline's, is the matrix
// (lib/analysis/crosstalk.h). One experiment, NAME-crosstalk (or `crosstalk`), stored like any
// other; `--show ID` prints it again.
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/injector_choice.h"
#include "codlctl/results_output.h"
#include "injectors/core/registry.h"
#include "lib/common/read_file.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::cli {
namespace {

int CrosstalkFail(const std::string& message, int code = kExitBadInput) {
  fprintf(stderr, "codlctl crosstalk: %s\n", TerminalSafe(message).c_str());
  return code;
}

// The experiment to run: FILE's (its name, nodes, settle, calibration and the options it gives
// each injector) or a default one, with one antagonist per injector at --levels, no victim.
Result<std::string> CrosstalkYaml(const std::string& text, const std::vector<std::string>& names,
                                  const CrosstalkCliOptions& o) {
  YAML::Node root;
  std::map<std::string, YAML::Node> options;
  if (!text.empty()) {
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return Err(std::string("cannot read the file: ") + e.what());
    }
    options = InjectorOptionsIn(root);
    // The victim's nodes are where the footprints matter: they become the experiment's.
    if (root["victim"] && root["victim"].IsMap() && root["victim"]["nodes"] && !root["nodes"])
      root["nodes"] = YAML::Clone(root["victim"]["nodes"]);
    for (const char* key : {"victim", "antagonists", "pairings", "tolerance", "crosstalk"})
      root.remove(key);
    root["name"] = root["name"].as<std::string>() + "-crosstalk";
  } else {
    root["name"] = "crosstalk";
    root["settle"] = "2s";
    root["calibration"]["duration"] = "2s";
  }
  YAML::Node window;
  window["window"] = o.window;
  window.SetStyle(YAML::EmitterStyle::Flow);
  root["crosstalk"] = window;
  root["repetitions"] = o.repetitions;
  root["warmup_trials"] = 0;  // the idle window needs no warm-up
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
    list.push_back(a);
  }
  root["antagonists"] = list;
  root["pairings"] = "singles";
  YAML::Emitter out;
  out << root;
  if (!out.good()) return Err("cannot write the cross-talk YAML: " + out.GetLastError());
  return std::string("# codlctl crosstalk: each antagonist alone, no victim\n") + out.c_str() +
         "\n";
}

Status CheckCrosstalkFlags(const CrosstalkCliOptions& o) {
  if (o.run.output != "table" && o.run.output != "json" && o.run.output != "csv")
    return Err("-o '" + o.run.output + "': expected table, json or csv");
  auto window = ParseDuration(o.window);
  if (!window.ok() || *window < 1 || *window > experiment::kMaxCrosstalkWindowS)
    return Err("--window '" + o.window + "' is out of range 1s … 1h");
  if (o.repetitions < 1 || o.repetitions > 1000)
    return Err("--repetitions " + std::to_string(o.repetitions) + " is out of range 1 … 1000");
  return CheckLevelsAndInjectors(o.levels, o.injectors, "0.5,max");
}

}  // namespace

void AddCrosstalkOptions(CLI::App* cmd, CrosstalkCliOptions* o) {
  cmd->add_option("file", o->run.file,
                  "optional experiment YAML: its name, nodes (the victim's), settle, calibration "
                  "and injector options carry over; its victim and antagonists do not");
  cmd->add_option("--show", o->show,
                  "print the cross-talk matrix of a stored experiment (ID or 'latest', from --db "
                  "or the controller) and run nothing");
  cmd->add_option("--injectors", o->injectors,
                  "injectors to measure, comma-separated (default: every one the node reports "
                  "available, noop excepted)")
      ->delimiter(',');
  cmd->add_option("--levels", o->levels, "levels in (0, 1] or max, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--window", o->window,
                  "the idle window each footprint is measured over (1s … 1h)")
      ->capture_default_str();
  cmd->add_option("--repetitions", o->repetitions,
                  "windows per antagonist and level, and idle baselines, 1 … 1000")
      ->capture_default_str();
  cmd->add_flag("--plan", o->plan,
                "print the trials and the estimated duration, then stop (nothing runs)");
  AddRunOptions(cmd, &o->run);
  cmd->footer(
      "Each antagonist runs alone at each level with no victim; the agent counts what the node\n"
      "did over an idle window (`sleep` for --window): PSI, disk and NIC bytes, memory held,\n"
      "memory bandwidth where the node has counters, and the antagonist's own CPU. Less an\n"
      "idle baseline's, that is its footprint: one row per antagonist and level, one column\n"
      "per resource, its own marked *, an off-target one over its threshold marked !. Where\n"
      "an independent counter exists (io_uring: diskstats; net: /proc/net/dev; memcpy: the\n"
      "memory-bandwidth counters) the antagonist's achieved rate is checked against it and\n"
      "the relative error printed. The same experiment in YAML: `crosstalk: true` (or\n"
      "{window: 5s}) and no victim (docs/experiment-format.md, \"Cross-talk\").\n\n"
      "  codlctl crosstalk --plan\n"
      "  codlctl crosstalk --injectors memcpy,cpu,io_uring --levels 0.5,max --report x.html\n"
      "  codlctl crosstalk experiments/io-bound.yaml --injectors io_uring -o json\n"
      "  codlctl crosstalk --show latest --db codl-results.db -o csv");
}

int CmdCrosstalk(const GlobalOptions& g, const CrosstalkCliOptions& o) {
  if (!o.show.empty()) {
    if (!o.run.file.empty())
      return CrosstalkFail("give FILE (to run a cross-talk experiment) or --show ID, not both");
    return ShowStored(g, "crosstalk", o.run.db, o.show, o.run.output, PrintCrosstalk);
  }
  if (Status s = CheckCrosstalkFlags(o); !s.ok()) return CrosstalkFail(s.error());
  std::string text;
  experiment::NodeSelector nodes;
  if (!o.run.file.empty()) {
    std::optional<std::string> read = ReadFileText(o.run.file);
    if (!read) return CrosstalkFail(o.run.file + ": cannot read the file");
    text = std::move(*read);
    auto spec = experiment::ParseExperiment(text, o.run.file, InjectorHooks());
    if (!spec.ok()) {
      fprintf(stderr, "%s\n", TerminalSafe(spec.error()).c_str());
      return kExitBadInput;
    }
    nodes = spec->victim.nodes;
  }
  const std::string source = o.run.file.empty() ? "crosstalk" : o.run.file;
  auto build = [&](const std::vector<std::string>& names,
                   PlanDetail detail) -> Result<std::string> {
    auto yaml = CrosstalkYaml(text, names, o);
    if (!yaml.ok()) return yaml;
    auto spec = experiment::ParseExperiment(*yaml, source, InjectorHooks());
    if (!spec.ok()) return Err("the cross-talk experiment does not validate: " + spec.error());
    if (o.run.output == "table" || detail == PlanDetail::kTrials) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      printf("cross-talk of: %s\n", TerminalSafe(list).c_str());
      PrintPlan(*spec, source, detail, o.run.db);
      fflush(stdout);
    }
    return yaml;
  };
  if (o.plan) {
    auto names = PlanInjectors(g, o.injectors, nodes);
    if (!names.ok())
      return CrosstalkFail(names.error(), names.code() == StatusCode::kUnavailable
                                              ? kExitUnreachable
                                              : kExitBadInput);
    auto yaml = build(*names, PlanDetail::kTrials);
    return yaml.ok() ? kExitOk : CrosstalkFail(yaml.error());
  }
  RunOptions run = o.run;
  const std::string output = o.run.output;
  run.print = [output](ControllerClient* c, const std::string& id) {
    return PrintCrosstalk(c, "", id, output, stdout);
  };
  return SubmitAndFollow(g, run, "crosstalk", [&](ControllerClient* c) -> Result<std::string> {
    std::vector<std::string> names = o.injectors;
    if (names.empty()) {
      auto supported = NodeInjectors(c, nodes);
      if (!supported.ok()) return supported.status();
      names = *supported;
    }
    return build(names, PlanDetail::kSummary);
  });
}

}  // namespace codl::cli
