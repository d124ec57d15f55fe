// codlctl: the CoDL command line. `codlctl --help` and `codlctl SUBCOMMAND --help` teach.
// Each subcommand is registered by one function below, in the order --help lists them; it
// keeps its own option values and returns what runs when it is the subcommand given.
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/progress_view.h"
#include "codlctl/results_output.h"
#include "lib/common/cli_help.h"
#include "lib/common/suggest.h"
#include "lib/common/utf8.h"
#include "lib/common/version.h"
#include "lib/daemon/daemon_config.h"
#include "lib/daemon/logging.h"

using namespace codl::cli;

namespace {

using Action = std::function<int(const GlobalOptions&)>;

struct Subcommand {
  CLI::App* app;
  Action action;
};

// Options shared by every subcommand; the token and log level are applied before any runs.
struct Globals {
  GlobalOptions options;
  std::string token;  // refused: a secret on the command line is visible in ps
  std::string token_file;
  std::string log_level = "warn";
};

// codlctl's log sink: stderr, each line above the progress bar when one is drawn (never glued
// onto it: codl::cli::WriteAboveBar).
class AboveBarSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    codl::cli::WriteAboveBar(stderr, std::string_view(line.data(), line.size()));
  }
  void flush_() override { fflush(stderr); }
};

// --log-level/--log-format configure the one process logger: the embedded controller's and
// agent's in `codlctl run`, formatted by lib/daemon/logging.cc as the daemons' own logs are.
// Logs go to stderr: stdout is the results (`codlctl run -o json > results.json`).
codl::Status ApplyLogging(const std::string& level, const std::string& format) {
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("codlctl", std::make_shared<AboveBarSink>()));
  // The daemons' levels (debug|info|warn|error) plus codlctl's long-standing trace and off.
  const bool daemon_level = codl::daemon::ValidLogLevel(level);
  if (codl::Status s =
          codl::daemon::ConfigureLogging("codlctl", daemon_level ? level : "error", format);
      !s.ok()) {
    return s;
  }
  if (!daemon_level) spdlog::set_level(spdlog::level::from_str(level));
  return codl::Status::Ok();
}

void AddGlobalOptions(CLI::App& app, Globals* g) {
  app.add_option("--controller", g->options.controller,
                 "controller address (host:port or unix:/path); default $CODL_CONTROLLER; "
                 "`run` without one starts an embedded controller");
  app.add_option("--tls-ca", g->options.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", g->options.tls.cert, "PEM client certificate (mTLS)");
  app.add_option("--tls-key", g->options.tls.key, "PEM client key (mTLS)");
  app.add_option("--token-file", g->token_file,
                 "file holding the bearer token (else $CODL_TOKEN); docs/security.md");
  app.add_option("--token", g->token, "refused: use --token-file (a token in argv shows in ps)");
  app.add_option("--log-level", g->log_level, "log level of the embedded controller/agent (`run`)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  app.add_option("--log-format", g->options.log_format,
                 "text | json: the embedded controller/agent's log lines (`run`); json also makes "
                 "run's progress and notes on stderr JSON log lines (docs/configuration.md)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

// -o/--output, the same on every query verb.
void AddOutputOption(CLI::App* cmd, std::string* output) {
  cmd->add_option("-o,--output", *output, "table | json | csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
}

Subcommand AddValidate(CLI::App& app) {
  struct Options {
    std::string file, db = "codl-results.db";
    bool plan = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("validate", "check an experiment file; --plan prints the trials");
  cmd->add_option("file", o->file, "experiment YAML")->required();
  cmd->add_flag("--plan", o->plan,
                "print the expanded trial list and an estimated duration; with --controller or "
                "$CODL_CONTROLLER, victim.cache as-is is weighed against the live agents' memory");
  cmd->add_option("--db", o->db,
                  "--plan: estimate from the last run of this experiment (same name) in this "
                  "results database (never created); without one it assumes a 10 s victim")
      ->capture_default_str();
  return {cmd, [o](const GlobalOptions& g) { return CmdValidate(g, o->file, o->plan, o->db); }};
}

Subcommand AddRun(CLI::App& app) {
  auto ro = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run",
      "run an experiment and print the slowdown table (embedded controller + agent unless "
      "--controller/$CODL_CONTROLLER is set)");
  cmd->add_option("file", ro->file, "experiment YAML")->required();
  AddRunOptions(cmd, ro.get());
  cmd->footer(
      "Logging: --log-level trace|debug|info|warn|error|off and --log-format text|json (global\n"
      "options, also after `run`) set the embedded controller's and agent's log on stderr. With\n"
      "--log-format json every line run writes to stderr is one JSON object (its progress and\n"
      "notes too, component \"codlctl\"); the results stay on stdout.");
  return {cmd, [ro](const GlobalOptions& g) { return CmdRun(g, *ro); }};
}

Subcommand AddResume(CLI::App& app) {
  auto ro = std::make_shared<RunOptions>();
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "resume",
      "continue an interrupted, cancelled or failed experiment where it stopped, then print "
      "its results as `run` does");
  cmd->add_option("id", *id, "experiment id or 'latest'")->required();
  auto retry_failed = std::make_shared<bool>(false);
  cmd->add_flag("--retry-failed", *retry_failed,
                "run its failed trials again too, each as its next attempt (only the last "
                "attempt counts); a done experiment with failed trials may be resumed so");
  AddRunOptions(cmd, ro.get());
  cmd->footer(
      "The stored plan is run on: the same seed and trial order, every committed trial kept\n"
      "(a trial cut off mid-run runs again under its index, as its next attempt), calibrations\n"
      "reused while valid. Failed trials are kept unless --retry-failed.\n"
      "Each resumption is recorded in the provenance. Without --controller, the embedded\n"
      "controller opens --db (the file the experiment ran with); an experiment left `running`\n"
      "by a killed `codlctl run` is marked interrupted first. Exit status as for `run`.");
  return {cmd, [ro, id, retry_failed](const GlobalOptions& g) {
            return CmdResume(g, *id, *ro, *retry_failed);
          }};
}

Subcommand AddSubmit(CLI::App& app) {
  struct Options {
    std::string file;
    bool watch = false, quiet = false, reconnect = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("submit", "send an experiment to the controller; prints its id");
  cmd->add_option("file", o->file, "experiment YAML")->required();
  cmd->add_flag("--watch", o->watch, "then follow it until it ends");
  cmd->add_flag("-q,--quiet", o->quiet, "with --watch: no progress output");
  cmd->add_flag("--reconnect,!--no-reconnect", o->reconnect,
                "with --watch: when the controller is lost, retry (0.5 s doubling to 10 s) and "
                "carry on once it is back (default: off: say how to re-attach, exit 3)");
  return {cmd, [o](const GlobalOptions& g) {
            return CmdSubmit(g, o->file, o->watch, o->quiet, o->reconnect);
          }};
}

Subcommand AddStatus(CLI::App& app) {
  struct Options {
    std::string id;  // no default: with --db and no id, status lists every experiment
    std::string db, output = "table";
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("status", "state of an experiment (ID or latest)");
  cmd->add_option("id", o->id, "experiment id or 'latest' (with --db and no id: list all)");
  cmd->add_option("--db", o->db, "read this results database instead of asking a controller");
  AddOutputOption(cmd, &o->output);
  return {cmd, [o](const GlobalOptions& g) {
            return CmdStatus(g, o->id.empty() && o->db.empty() ? "latest" : o->id, o->db,
                             o->output);
          }};
}

Subcommand AddWatch(CLI::App& app) {
  struct Options {
    std::string id, output = "table";
    bool quiet = false, reconnect = true;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "watch", "follow an experiment's progress until it ends (json/csv: one record per update)");
  cmd->add_option("id", o->id, "experiment id or 'latest'")->default_val("latest");
  AddOutputOption(cmd, &o->output);
  cmd->add_flag("-q,--quiet", o->quiet,
                "no progress output: wait for the end, then say how it ended (exit status too)");
  cmd->add_flag("--reconnect,!--no-reconnect", o->reconnect,
                "when the controller is lost, say so and retry (0.5 s doubling to 10 s), then "
                "carry on from its current status once it is back (default: on; "
                "--no-reconnect: exit 3, saying how to re-attach)");
  return {cmd, [o](const GlobalOptions& g) {
            return CmdWatch(g, o->id, o->output, o->quiet, o->reconnect);
          }};
}

Subcommand AddResults(CLI::App& app) {
  struct Options {
    std::string id, db, output = "table", metric;
    bool trials = false, phases = false, ranks = false, phases_summary = false, telemetry = false,
         json = false, csv = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("results", "slowdown per pairing, with CI and p-value");
  cmd->add_option("id", o->id, "experiment id or 'latest'")->default_val("latest");
  cmd->add_option("--db", o->db,
                  "read this results database (e.g. codl-results.db), no controller");
  cmd->add_option("-o,--output", o->output,
                  "table (fits 120 columns) | wide (every column) | json | csv | "
                  "interactions-csv (one row per combination vs its singles)")
      ->check(CLI::IsMember({"table", "wide", "json", "csv", "interactions-csv"}))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "same as -o json");
  cmd->add_flag("--csv", o->csv, "same as -o csv");
  cmd->add_option("--metric", o->metric,
                  "re-analyse under this per-trial metric: elapsed | throughput | mean | median | "
                  "pNN (default: the experiment's victim.metric)");
  auto* trials =
      cmd->add_flag("--trials", o->trials,
                    "long format: one row per trial (CSV unless -o is given); "
                    "--trials, --phases, --ranks, --phases-summary and --telemetry exclude each "
                    "other");
  auto* phases = cmd->add_flag("--phases", o->phases,
                               "long format: one row per trial, rank and phase (CSV unless -o is "
                               "given)")
                     ->excludes(trials);
  auto* ranks = cmd->add_flag("--ranks", o->ranks,
                              "long format: one row per trial and victim rank, its node, step and "
                              "busy time (CSV unless -o is given)")
                    ->excludes(trials)
                    ->excludes(phases);
  cmd->add_flag("--phases-summary", o->phases_summary,
                "one row per pairing and phase: its median, the baseline's, the slowdown (CSV "
                "unless -o is given)")
      ->excludes(trials)
      ->excludes(phases)
      ->excludes(ranks);
  cmd->add_flag("--telemetry", o->telemetry,
                "long format: one row per trial and node — the victim's and every node that "
                "ran only antagonists — with its node telemetry (CSV unless -o is given)")
      ->excludes(trials)
      ->excludes(phases)
      ->excludes(ranks)
      ->excludes("--phases-summary");
  return {cmd, [o, cmd](const GlobalOptions& g) {
            std::string output = o->json ? "json" : o->csv ? "csv" : o->output;
            const std::string tidy = o->trials           ? "trials"
                                     : o->phases         ? "phases"
                                     : o->ranks          ? "ranks"
                                     : o->phases_summary ? "phases-summary"
                                     : o->telemetry      ? "telemetry"
                                                         : "";
            // The long formats are for pandas/R: CSV unless an output was asked for.
            if (!tidy.empty() && cmd->count("-o") == 0 && !o->json && !o->csv) output = "csv";
            return CmdResults(g, o->id, o->db, output, o->metric, tidy);
          }};
}

// `report` reads the database when given one, else asks the controller (default address
// tunables::kDefaultControllerAddress when none is configured).
int RunReport(const GlobalOptions& g, const std::string& id, const std::string& db,
              const std::string& path, const std::string& figures) {
  std::unique_ptr<ControllerClient> client;
  if (db.empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) {
      fprintf(stderr, "codlctl report: %s\n", codl::TerminalSafe(c.error()).c_str());
      return kExitBadInput;
    }
    client = std::move(c.value());
  }
  return WriteReport(client.get(), db, id, path, figures);
}

Subcommand AddReport(CLI::App& app) {
  struct Options {
    std::string id, db, path = "report.html", figures;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("report", "write the self-contained HTML report");
  cmd->add_option("id", o->id, "experiment id or 'latest'")->default_val("latest");
  cmd->add_option("--db", o->db, "read this results database, no controller");
  auto* output = cmd->add_option("--output", o->path, "HTML file to write");
  output->capture_default_str();
  // Every other verb's -o is a format; report's was a file. Kept for one release (docs/cli.md).
  auto* old_o = cmd->add_option("-o", o->path,
                                "same as --output FILE (deprecated: elsewhere -o names a format; "
                                "kept for one release)")
                    ->excludes(output);
  cmd->add_option(
      "--figures", o->figures,
      "also write every figure as standalone SVG + CSV into this directory "
      "(created when missing); with --figures the HTML is written only when --output is given");
  return {cmd, [o, output, old_o](const GlobalOptions& g) {
            if (old_o->count() > 0) {
              fprintf(stderr,
                      "codlctl report: note: -o FILE is deprecated (every other command's -o is a "
                      "format); use --output %s\n",
                      codl::TerminalSafe(o->path).c_str());
            }
            // --figures alone asks for the figures, not for a report.html in the current directory.
            const bool html = o->figures.empty() || output->count() > 0 || old_o->count() > 0;
            return RunReport(g, o->id, o->db, html ? o->path : "", o->figures);
          }};
}

Subcommand AddPredict(CLI::App& app) {
  auto o = std::make_shared<PredictCliOptions>();
  auto* cmd = app.add_subcommand(
      "predict", "predict combined slowdowns from an experiment's singles; error vs measured");
  AddPredictOptions(cmd, o.get());
  return {cmd, [o](const GlobalOptions& g) { return CmdPredict(g, *o); }};
}

Subcommand AddProfile(CLI::App& app) {
  auto o = std::make_shared<ProfileCliOptions>();
  auto* cmd = app.add_subcommand(
      "profile",
      "a victim's interference fingerprint: its slowdown against every injector its node "
      "supports, a sweep and a tolerance search each, as one experiment");
  AddProfileOptions(cmd, o.get());
  return {cmd, [o](const GlobalOptions& g) { return CmdProfile(g, *o); }};
}

Subcommand AddCrosstalk(CLI::App& app) {
  auto o = std::make_shared<CrosstalkCliOptions>();
  auto* cmd = app.add_subcommand(
      "crosstalk",
      "what each antagonist touches besides its own resource: each alone, no victim, its "
      "footprint on every resource the node counts, as one experiment");
  AddCrosstalkOptions(cmd, o.get());
  return {cmd, [o](const GlobalOptions& g) { return CmdCrosstalk(g, *o); }};
}

Subcommand AddAgents(CLI::App& app) {
  struct Options {
    std::string output = "table";
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("agents", "agents known to the controller");
  cmd->add_option("-o,--output", o->output,
                  "table (labels wrapped within 120 columns) | wide (labels on one line) | json | "
                  "csv")
      ->check(CLI::IsMember({"table", "wide", "json", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "same as -o json");
  return {cmd, [o](const GlobalOptions& g) { return CmdAgents(g, o->json ? "json" : o->output); }};
}

Subcommand AddCompare(CLI::App& app) {
  struct Options {
    std::vector<std::string> ids;
    std::string db, output = "table", metric, report;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "compare",
      "the pairings several experiments share, side by side: slowdowns and their ratio to the "
      "first experiment's, with bootstrap CIs");
  cmd->add_option("ids", o->ids, "two or more experiment ids ('latest' allowed)")
      ->required()
      ->expected(2, -1);
  cmd->add_option("--db", o->db, "read this results database, no controller");
  AddOutputOption(cmd, &o->output);
  cmd->add_option("--metric", o->metric,
                  "per-trial metric for every experiment (default: the first one's "
                  "victim.metric)");
  cmd->add_option("--report", o->report, "also write the comparison as an HTML section here");
  return {cmd, [o](const GlobalOptions& g) {
            return CmdCompare(g, o->ids, o->db, o->output, o->metric, o->report);
          }};
}

Subcommand AddTrace(CLI::App& app) {
  struct Options {
    std::string id, db, output = "trace.json";
    int trial = 1;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "trace",
      "write a trial's PyTorch profiler trace (victim.trace) with the antagonists' achieved "
      "rates as counter tracks, as Chrome-trace JSON for Perfetto");
  cmd->add_option("id", o->id, "experiment id or 'latest'")->default_val("latest");
  cmd->add_option("--trial", o->trial,
                  "trial number, from 1 as `results --trials` numbers them (traced: the first "
                  "trial of each pairing)")
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "file to write ('-': stdout)")->capture_default_str();
  cmd->add_option("--db", o->db, "read this results database, no controller");
  return {cmd,
          [o](const GlobalOptions& g) { return CmdTrace(g, o->id, o->db, o->trial, o->output); }};
}

Subcommand AddCancel(CLI::App& app) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("cancel", "cancel an experiment (its antagonists are stopped)");
  cmd->add_option("id", *id, "experiment id or 'latest'")->default_val("latest");
  return {cmd, [id](const GlobalOptions& g) { return CmdCancel(g, *id); }};
}

// --set KEY=VALUE pairs as an option map; false (after saying which) for a malformed one.
bool ParseSets(const std::vector<std::string>& sets, std::map<std::string, std::string>* options) {
  for (const auto& kv : sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      fprintf(stderr, "codlctl calibrate: --set '%s': expected KEY=VALUE\n", kv.c_str());
      return false;
    }
    (*options)[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return true;
}

Subcommand AddCalibrate(CLI::App& app) {
  struct Options {
    std::string injector, agent_id, duration = "5s";
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "calibrate", "measure an injector's peak on agents and refresh the cached calibration");
  cmd->add_option("injector", o->injector, "injector name (see codl-inject --list)")->required();
  cmd->add_option("--set", o->sets, "KEY=VALUE injector option (repeatable)");
  cmd->add_option("--agent", o->agent_id, "agent id (default: every live agent)");
  cmd->add_option("--duration", o->duration, "calibration length")->capture_default_str();
  return {cmd, [o](const GlobalOptions& g) {
            std::map<std::string, std::string> options;
            if (!ParseSets(o->sets, &options)) return kExitBadInput;
            return CmdCalibrate(g, o->injector, options, o->agent_id, o->duration);
          }};
}

// A mistyped subcommand gets a suggestion instead of CLI11's "arguments were not expected".
// The first word that is neither an option nor a global option's value names the subcommand.
// Returns true (after saying so) when that word is not a subcommand.
bool RejectUnknownSubcommand(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") return false;
    if (arg.rfind('-', 0) == 0) {
      const CLI::Option* opt = app.get_option_no_throw(arg);
      if (opt != nullptr && arg.find('=') == std::string::npos && opt->get_type_size_min() > 0)
        ++i;  // skip the option's value
      continue;
    }
    if (std::find(names.begin(), names.end(), arg) != names.end()) return false;
    fprintf(stderr, "codlctl: unknown command '%s'%s; see codlctl --help\n", arg.c_str(),
            codl::DidYouMean(arg, names).c_str());
    return true;
  }
  return false;
}

}  // namespace

// What `run` and `resume` share: where results go, and the embedded agent's settings.
void codl::cli::AddRunOptions(CLI::App* cmd, RunOptions* ro) {
  cmd->add_option("--db", ro->db, "results database of the embedded controller")
      ->capture_default_str();
  cmd->add_option("-o,--output", ro->output, "table (fits 120 columns) | wide | csv | json")
      ->capture_default_str();
  cmd->add_option("--report", ro->report, "also write the HTML report to this file");
  cmd->add_option("--csv", ro->csv, "also write the results as CSV to this file");
  cmd->add_option("--json", ro->json, "also write the results as JSON to this file");
  cmd->add_option("--lease", ro->lease, "embedded agent's dead-man lease")->capture_default_str();
  cmd->add_option("--scratch-root", ro->scratch_roots,
                  "embedded agent: directory injectors may write under (repeatable; default "
                  "$CODL_SCRATCH_ROOTS, else ~/.cache/codl/scratch, made private)");
  cmd->add_flag("-q,--quiet", ro->quiet, "no progress output");
}

int main(int argc, char** argv) {
  CLI::App app{
      "codlctl: measure how much slower a training job gets when storage, memory bandwidth,\n"
      "PCIe, the interconnect or the GPU is shared with a calibrated noisy neighbour.\n\n"
      "  codlctl run experiments/quickstart.yaml      run here (embedded controller + agent)\n"
      "  codlctl validate exp.yaml --plan             check a file, print the trial plan\n"
      "  codlctl submit exp.yaml --controller H:P     send to a cluster controller\n"
      "  codlctl results latest --db codl-results.db  slowdown table from a results file\n\n"
      "Exit codes: 0 ok, 1 experiment failed or measured nothing, 2 bad input,\n"
      "3 controller or agent unreachable, 130 interrupted (Ctrl-C: the experiment is cancelled).\n"
      "Global options (--controller, --tls-*, --token-file, --log-level, --log-format) may come\n"
      "before or after the command."};
  codl::UsePlainHelp(app);
  app.require_subcommand(1);
  // Global options may follow the subcommand too (`codlctl submit e.yaml --controller H:P`):
  // a subcommand passes the options it does not know up to codlctl itself.
  app.fallthrough();
  app.set_version_flag("--version", std::string("codlctl ") + codl::CodlVersion());
  Globals g;
  AddGlobalOptions(app, &g);
  const std::vector<Subcommand> subcommands = {
      AddValidate(app), AddRun(app),     AddResume(app),    AddSubmit(app),
      AddStatus(app),   AddWatch(app),   AddResults(app),   AddCompare(app),
      AddPredict(app),  AddProfile(app), AddCrosstalk(app), AddReport(app),
      AddAgents(app),   AddCancel(app),  AddCalibrate(app), AddTrace(app)};

  if (RejectUnknownSubcommand(app, argc, argv)) return kExitBadInput;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  // Test hook (tests/repo/doc_commands_check.py): stop after parsing, so the command lines
  // quoted in the docs can be checked without a controller.
  if (getenv("CODLCTL_PARSE_ONLY") != nullptr) return kExitOk;
  if (codl::Status s = ApplyLogging(g.log_level, g.options.log_format); !s.ok()) {
    fprintf(stderr, "codlctl: %s\n", codl::TerminalSafe(s.error()).c_str());
    return kExitBadInput;
  }
  if (!g.token.empty()) {
    fprintf(stderr,
            "codlctl: --token puts the secret on the command line, where every local user sees "
            "it (ps, /proc); use --token-file FILE or $CODL_TOKEN\n");
    return kExitBadInput;
  }
  std::string token;
  if (!g.token_file.empty()) {
    auto text = codl::daemon::ReadTokenFile(g.token_file);
    if (!text.ok()) {
      fprintf(stderr, "codlctl: --token-file: %s\n", codl::TerminalSafe(text.error()).c_str());
      return kExitBadInput;
    }
    token = *text;
  } else if (const char* env = getenv("CODL_TOKEN"); env != nullptr) {
    token = env;
  }
  codl::rpc::SetBearerToken(token);
  for (const auto& s : subcommands) {
    if (*s.app) return s.action(g.options);
  }
  return kExitBadInput;
}
