// codlctl's subcommands. Each returns the process exit code: 0 ok, 1 experiment failed (or a
// runtime error), 2 bad input (bad YAML, bad flags, unknown experiment).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codlctl/controller_client.h"
#include "lib/common/tunables.h"
#include "lib/rpc/rpc_util.h"
#include "lib/spec/spec.h"

namespace CLI {
class App;
}

namespace codl::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
// The controller (or, through it, an agent) could not be reached: retrying may help, the
// experiment itself neither failed nor was rejected.
constexpr int kExitUnreachable = 3;
// `run` or `submit --watch` stopped by Ctrl-C (SIGINT; 143 for SIGTERM): 128 + the signal, as
// a shell reports a job it interrupted. The experiment was cancelled first.
constexpr int kExitInterrupted = 130;

struct GlobalOptions {
  std::string controller;  // --controller / $CODL_CONTROLLER
  rpc::TlsFiles tls;
  // --log-format: "json" makes codlctl's own stderr lines (and the embedded daemons' logs) JSON.
  std::string log_format = "text";
};

// A client for the configured controller (--controller, $CODL_CONTROLLER, else the default
// address). Fails only on a bad address or TLS files; reachability shows on the first call.
Result<std::unique_ptr<ControllerClient>> ConnectController(const GlobalOptions& g);

struct RunOptions;
class ControllerClient;
// What `run`, `resume` and `profile` submit, asked once the controller is connected.
using YamlForController = std::function<Result<std::string>(ControllerClient*)>;
struct RunOptions {
  std::string file;
  std::string db = "codl-results.db";
  std::string output = "table";
  std::string report;  // --report FILE: also write the HTML report
  std::string csv;     // --csv FILE: also write the CSV results
  std::string json;    // --json FILE: also write the JSON results
  std::string lease = tunables::DurationFlagText(tunables::kDefaultLeaseS);
  std::vector<std::string> scratch_roots;  // embedded agent: where injectors may write
  bool quiet = false;
  // Set (`profile`): prints the finished experiment's figures instead of the results table.
  std::function<int(ControllerClient*, const std::string& id)> print;
};

// The parser hooks that check injector names and options against the registry.
experiment::ParseHooks InjectorHooks();
// Connects to the configured controller (else starts an embedded one as `run` does), submits
// what `yaml_for` returns (its error: said, exit 2; kUnavailable: 3), follows the experiment to
// its end and prints its results. `verb` names the command in messages.
int SubmitAndFollow(const GlobalOptions& g, const RunOptions& o, const std::string& verb,
                    const YamlForController& yaml_for);
// `validate`'s account of an experiment: trials, baselines, power warnings; with a plan
// (kSummary or kTrials) the placement, the estimated duration and, for kTrials, every trial.
// `g` with a controller configured: the victim.cache warning weighs the data against the live
// agents' memory instead of this machine's.
enum class PlanDetail { kNone, kSummary, kTrials };
void PrintPlan(const experiment::ExperimentSpec& spec, const std::string& file, PlanDetail detail,
               const std::string& db, const GlobalOptions* g = nullptr);

// `db`: where --plan looks for the last run of the same experiment (its victim time).
int CmdValidate(const GlobalOptions& g, const std::string& file, bool plan,
                const std::string& db = "codl-results.db");
int CmdRun(const GlobalOptions& g, const RunOptions& o);
// `codlctl resume ID`: continues an interrupted, cancelled or failed experiment (o.file unused).
// retry_failed: --retry-failed (its failed trials run again as their next attempts).
int CmdResume(const GlobalOptions& g, const std::string& id, const RunOptions& o,
              bool retry_failed);
// `quiet`: with `watch`, no progress lines (the exit status still tells how it ended).
// reconnect (watch, submit --watch): a lost controller is waited for, the watch goes on once it
// is back (codlctl/watch_follow.h); else the watch ends, saying how to re-attach.
int CmdSubmit(const GlobalOptions& g, const std::string& file, bool watch, bool quiet = false,
              bool reconnect = false);
// output (status, watch, results, agents, compare): table | json | csv.
int CmdStatus(const GlobalOptions& g, const std::string& id, const std::string& db,
              const std::string& output = "table");
int CmdWatch(const GlobalOptions& g, const std::string& id, const std::string& output = "table",
             bool quiet = false, bool reconnect = true);
// watch -o json|csv: one record per progress update (status_output.h).
int WatchRecords(const GlobalOptions& g, const std::string& id, const std::string& output,
                 bool reconnect = true);
// tidy: "" (per-pairing summary), "trials", "phases", "ranks", "phases-summary" or "telemetry"
// (long format, results_output.h).
int CmdResults(const GlobalOptions& g, const std::string& id, const std::string& db,
               const std::string& output, const std::string& metric = "",
               const std::string& tidy = "");
// Experiments compared pairing by pairing (lib/analysis/compare.h); report: HTML file or "".
int CmdCompare(const GlobalOptions& g, const std::vector<std::string>& ids, const std::string& db,
               const std::string& output, const std::string& metric, const std::string& report);
// output: table | json (one object per agent per line) | csv
int CmdAgents(const GlobalOptions& g, const std::string& output);
int CmdCancel(const GlobalOptions& g, const std::string& id);
// codlctl trace: trial `trial` (1-based)'s profiler trace, with the antagonists' counter tracks,
// written to `output` ("-": stdout). From `db` when given, else the controller.
int CmdTrace(const GlobalOptions& g, const std::string& id, const std::string& db, int trial,
             const std::string& output);
// codlctl predict (cmd_predict.cc): options, their CLI declarations (with the --help text), run.
struct PredictCliOptions {
  std::string id = "latest", db, model = "multiplicative", metric, output = "table";
  std::vector<std::string> combinations;
  bool all_trials = false;  // flagged trials too
  // Prediction from profiles: both or neither (the positional id is then unused).
  std::string victim_profile, neighbour;
  // --measured ID (repeatable): experiments that measured the pair, compared with instead of
  // searching --db for them.
  std::vector<std::string> measured;
};
void AddPredictOptions(CLI::App* cmd, PredictCliOptions* o);
int CmdPredict(const GlobalOptions& g, const PredictCliOptions& o);
// codlctl profile (cmd_profile.cc): a victim against every injector its node supports, each
// at a coarse sweep plus a tolerance search, as one experiment; --show prints a stored one.
struct ProfileCliOptions {
  RunOptions run;                      // file, --db, -o, --report, --scratch-root, ...
  std::string show;                    // --show ID: print that experiment's profile, run nothing
  std::vector<std::string> injectors;  // --injectors a,b (default: what the node supports)
  std::vector<std::string> levels = {"0.25", "0.5", "max"};  // --levels
  double slowdown = 1.10;                                    // --slowdown: the tolerance threshold
  double resolution = 0.1;                                   // --resolution
  int max_trials = 20;  // --max-trials: per antagonist's search
  int repetitions = 0;  // --repetitions (0: the file's)
  bool plan = false;    // --plan: print the plan and its duration, run nothing
};
void AddProfileOptions(CLI::App* cmd, ProfileCliOptions* o);
int CmdProfile(const GlobalOptions& g, const ProfileCliOptions& o);
// codlctl crosstalk (cmd_crosstalk.cc): every antagonist alone, with no victim, over an idle
// window; its footprint on every resource the node counts (lib/analysis/crosstalk.h).
struct CrosstalkCliOptions {
  RunOptions run;                      // file (optional), --db, -o, --report, ...
  std::string show;                    // --show ID: print that experiment's matrix, run nothing
  std::vector<std::string> injectors;  // --injectors a,b (default: what the nodes support)
  std::vector<std::string> levels = {"0.5", "max"};  // --levels
  std::string window = "5s";                         // --window: the idle window
  int repetitions = 3;                               // --repetitions
  bool plan = false;  // --plan: print the plan and its duration, run nothing
};
void AddCrosstalkOptions(CLI::App* cmd, CrosstalkCliOptions* o);
int CmdCrosstalk(const GlobalOptions& g, const CrosstalkCliOptions& o);
// The injectors every live agent matching `nodes` reports available (its `injectors` label,
// from `codl-inject --list`), noop excepted, in registry order; kUnavailable when the
// controller cannot be asked.
Result<std::vector<std::string>> NodeInjectors(ControllerClient* client,
                                               const experiment::NodeSelector& nodes);
// The same on this host without a controller (--plan with nothing started): asked of
// codl-inject beside codlctl, as the agent asks it (codlctl links only the injectors' catalog).
std::vector<std::string> HostInjectors();
// --plan's injectors: `given`, else what the configured controller's nodes matching `nodes`
// support (kUnavailable when it cannot be asked), else this host's.
Result<std::vector<std::string>> PlanInjectors(const GlobalOptions& g,
                                               const std::vector<std::string>& given,
                                               const experiment::NodeSelector& nodes);
// profile's and crosstalk's --levels (each in (0, 1] or max; `example` in the empty-list error)
// and --injectors (known names).
Status CheckLevelsAndInjectors(const std::vector<std::string>& levels,
                               const std::vector<std::string>& names, const char* example);
// --show ID: `print` (PrintProfile, PrintCrosstalk) from the configured controller, else `db`;
// `verb` names the command in errors.
using ShowPrinter = std::function<int(ControllerClient*, const std::string& db,
                                      const std::string& id, const std::string& output, FILE*)>;
int ShowStored(const GlobalOptions& g, const std::string& verb, const std::string& db,
               const std::string& id, const std::string& output, const ShowPrinter& print);
// `run`'s and `resume`'s options (main.cc): --db, -o, --report, --csv, --json, --lease,
// --scratch-root, -q.
void AddRunOptions(CLI::App* cmd, RunOptions* ro);
int CmdCalibrate(const GlobalOptions& g, const std::string& injector,
                 const std::map<std::string, std::string>& options, const std::string& agent,
                 const std::string& duration);

}  // namespace codl::cli
