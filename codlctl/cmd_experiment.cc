// validate, run, submit, watch, cancel: the commands that drive an experiment.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/embedded.h"
#include "codlctl/progress_view.h"
#include "codlctl/repetitions_estimate.h"
#include "codlctl/results_output.h"
#include "codlctl/victim_estimate.h"
#include "codlctl/watch_follow.h"
#include "injectors/core/registry.h"
#include "lib/analysis/stats.h"
#include "lib/common/read_file.h"
#include "lib/common/subprocess.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"
#include "lib/rpc/records_proto.h"
#include "lib/spec/spec.h"

namespace codl::cli {

experiment::ParseHooks InjectorHooks() {
  experiment::ParseHooks h;
  h.injector = [](const std::string& n) { return injectors::ValidateInjectorName(n).message(); };
  h.option = [](const std::string& i, const std::string& k, const std::string& v) {
    return injectors::ValidateOption(i, k, v).message();
  };
  return h;
}

namespace {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::optional<std::string> text = ReadFileText(path);
  if (!text) return Err(path + ": cannot read the file");
  return std::move(*text);
}

// Watches until the experiment ends; returns its final status.
// `reconnect`: a lost controller is waited for (watch_follow.h); else its loss ends the watch,
// saying that the study is kept and how to re-attach.
Result<v1::ExperimentStatus> WatchToEnd(ControllerClient* client, const std::string& id, bool quiet,
                                        bool json_lines, bool reconnect = false) {
  ProgressView view(stderr, json_lines);
  v1::ExperimentStatus last;
  FollowOptions follow{reconnect, [json_lines](const std::string& line) {
                         if (json_lines) fprintf(stderr, "%s\n", JsonNote("warn", line).c_str());
                         else WriteAboveBar(stderr, TerminalSafe(line) + "\n");
                       }};
  Status s = FollowExperiment(
      client, id,
      [&](const v1::ExperimentEvent& ev) {
        last = ev.status();
        if (!quiet) view.OnEvent(ev);
      },
      follow);
  view.Finish();
  if (!s.ok()) return s;
  // The stream ends with the final event; ask once more in case it broke early.
  auto st = client->GetStatus(id);
  if (st.ok()) last = *st;
  return last;
}

// A line of codlctl's own on stderr: text, or with --log-format json one JSON log line, so that
// stderr stays one JSON object per line beside the embedded daemons' JSON logs.
void Note(const GlobalOptions& g, const char* level, const std::string& text) {
  if (g.log_format == "json") fprintf(stderr, "%s\n", JsonNote(level, text).c_str());
  else WriteAboveBar(stderr, TerminalSafe(text) + "\n");  // never glued onto a drawn bar
}

bool JsonLines(const GlobalOptions& g) { return g.log_format == "json"; }

bool IsDone(const v1::ExperimentStatus& s) {
  auto state = rpc::StateOf(s);
  return state.ok() && *state == ExperimentState::kDone;
}

// SIGINT/SIGTERM during `run`/`watch`: the first cancels the experiment cleanly (antagonists
// stopped, trials so far kept); the second exits at once (children die with us).
class InterruptHandler {
 public:
  InterruptHandler() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    thread_ = std::thread([this, set] {
      int sig;
      while (sigwait(&set, &sig) == 0) {
        if (done_) return;
        if (++count_ == 1) {
          signal_ = sig;
          fprintf(stderr,
                  "\ncodlctl: interrupted — cancelling the experiment (again to quit now)\n");
          if (on_first_) on_first_();
        } else {
          _exit(128 + sig);
        }
      }
    });
  }
  void OnFirst(std::function<void()> f) { on_first_ = std::move(f); }
  ~InterruptHandler() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }
  bool interrupted() const { return count_ > 0; }
  // 128 + the first signal (130 for Ctrl-C) once interrupted; `otherwise` before.
  int ExitCode(int otherwise) const { return interrupted() ? 128 + signal_ : otherwise; }

 private:
  std::thread thread_;
  std::atomic<int> count_{0};
  std::atomic<int> signal_{SIGINT};
  std::atomic<bool> done_{false};
  std::function<void()> on_first_;
};

// "victims run as nobody on a, b; root on c" from the live agents' victim_user labels ("" when
// none is live or none says); embedded: why it may differ from a cluster agent's.
std::string VictimUsersLine(ControllerClient* c, bool embedded) {
  auto agents = c->ListAgents();
  if (!agents.ok()) return "";
  std::map<std::string, std::vector<std::string>> by_user;
  for (const auto& a : *agents) {
    auto it = a.labels().find("victim_user");
    if (a.alive() && it != a.labels().end()) by_user[it->second].push_back(a.agent_id());
  }
  if (by_user.empty()) return "";
  std::string line = "victims run as ";
  bool first = true;
  for (const auto& [user, nodes] : by_user) {
    line += first ? "" : "; ";
    first = false;
    line += user + " on ";
    for (size_t i = 0; i < nodes.size(); ++i) line += (i ? ", " : "") + nodes[i];
  }
  if (embedded) {
    line +=
        " (the embedded agent runs them as your own user; a cluster agent started as root "
        "runs them as its victim_user, default nobody: docs/security.md)";
  }
  return line;
}

// `run`'s and `resume`'s -o and --lease: the lease in seconds, or nullopt (the error said).
std::optional<double> CheckRunOptions(const GlobalOptions& g, const RunOptions& o,
                                      const std::string& verb) {
  if (o.output != "table" && o.output != "wide" && o.output != "csv" && o.output != "json") {
    Note(g, "error",
         "codlctl " + verb + ": -o '" + o.output + "': expected table, wide, csv or json");
    return std::nullopt;
  }
  auto lease = ParseDuration(o.lease);
  if (!lease.ok()) {
    Note(g, "error", "codlctl " + verb + ": --lease: " + lease.error());
    return std::nullopt;
  }
  return *lease;
}

// The controller `run` and `resume` talk to: --controller/$CODL_CONTROLLER, else an embedded
// controller and agent on `o.db`. The error is already said; its code is kInvalidArgument for
// a bad address, else the embedded cluster could not start.
Result<std::unique_ptr<ControllerClient>> ConnectOrEmbed(const GlobalOptions& g,
                                                         const RunOptions& o, double lease_s,
                                                         EmbeddedCluster* embedded) {
  std::string address = ConfiguredController(g.controller);
  if (address.empty()) {
    if (!o.quiet)
      Note(g, "info",
           "codlctl: no controller configured: starting an embedded controller and agent "
           "(results in " +
               o.db + ")");
    if (Status s = embedded->Start(o.db, lease_s, o.scratch_roots); !s.ok()) {
      Note(g, "error", "codlctl: " + s.error());
      return Error{s.error(), StatusCode::kUnavailable};
    }
    address = embedded->controller_address();
  }
  auto client = ControllerClient::Connect(rpc::Endpoint{address, g.tls});
  if (!client.ok()) {
    Note(g, "error", "codlctl: " + client.error());
    return Error{client.error(), StatusCode::kInvalidArgument};
  }
  return client;
}

// Follows experiment `id` to its end, prints its results (and --csv/--json/--report), and
// returns run's exit status. Ctrl-C cancels it (`interrupts`).
int FollowToEnd(const GlobalOptions& g, const RunOptions& o, ControllerClient* c,
                const std::string& id, InterruptHandler* interrupts) {
  interrupts->OnFirst([c, id] { (void)c->Cancel(id); });
  auto final = WatchToEnd(c, id, o.quiet, JsonLines(g));
  if (!final.ok()) {
    Note(g, "error", "codlctl: " + final.error());
    return interrupts->ExitCode(ExitCodeFor(final.status()));
  }
  std::string nothing_measured;  // from the results just printed: no second load to judge them
  int rc =
      o.print ? o.print(c, id) : PrintResults(c, "", id, o.output, stdout, "", &nothing_measured);
  if (o.print && rc == kExitOk && IsDone(*final)) rc = MeasuredExitCode(c, "", id);
  for (const auto& [path, format] : {std::pair{o.csv, "csv"}, std::pair{o.json, "json"}}) {
    if (path.empty() || rc != kExitOk) continue;
    FILE* f = fopen(path.c_str(), "w");
    if (f == nullptr) {
      Note(g, "error", "codlctl: cannot write '" + path + "'");
      rc = kExitFailed;
      continue;
    }
    rc = PrintResults(c, "", id, format, f);
    fclose(f);
  }
  if (!o.report.empty() && rc == kExitOk) rc = WriteReport(c, "", id, o.report);
  // Where the results are: the embedded run's --db, or the controller's own database (reached
  // through it, never through a --db that is not its file).
  const std::string controller = ConfiguredController(g.controller);
  const std::string where = controller.empty() ? " --db " + o.db : " --controller " + controller;
  if (!IsDone(*final)) {
    Note(g, "error",
         "experiment " + id + " " + rpc::StateName(*final) +
             (final->error().empty() ? "" : ": " + final->error()));
    const auto state = rpc::StateOf(*final);
    if (state.ok() && *state != ExperimentState::kQueued && *state != ExperimentState::kRunning) {
      Note(g, "info", "continue it with: codlctl resume " + id + where);
    }
  } else if (!o.quiet) {
    Note(g, "info",
         "experiment " + id + " done; results in " +
             (controller.empty() ? o.db : "the controller's database") + " (codlctl results " + id +
             where + ")");
  }
  if (rc == kExitOk && IsDone(*final)) rc = MeasuredExitCode(id, nothing_measured);
  return interrupts->ExitCode(rc != kExitOk ? rc : ExitCodeFor(*final));
}

}  // namespace

// What the planned repetitions can show at all: below 3 trials a side no CI is reported, and
// the exact rank test has a smallest possible p that may already exceed 5%.
static void PrintPowerWarnings(int repetitions, int baselines) {
  if (repetitions < 3 || baselines < 3) {
    printf(
        "warning: %d repetitions and %d baselines: fewer than 3 trials on a side, so no "
        "confidence interval will be reported (n/a)\n",
        repetitions, baselines);
  }
  const double p_min = experiment::MannWhitneyMinP(static_cast<size_t>(std::max(repetitions, 0)),
                                                   static_cast<size_t>(std::max(baselines, 0)));
  if (p_min > 0.05) {
    printf(
        "warning: with %d trials per pairing against %d baselines the rank test's p cannot "
        "fall below %.3g: no slowdown can be significant at 5%%; raise repetitions\n",
        repetitions, baselines, p_min);
  }
}

// The memory a victim's data competes with: with a controller configured and answering, the
// largest live agent's (its memory_bytes label: any victim node could hold the data); else this
// machine's, the node of an embedded `codlctl run`.
struct VictimMemory {
  std::string where;  // "node gpu-3's", "this machine's"
  double bytes = 0;
};
static VictimMemory VictimNodeMemory(const GlobalOptions* g) {
  if (g != nullptr && !ConfiguredController(g->controller).empty()) {
    if (auto client = ConnectController(*g); client.ok()) {
      if (auto agents = (*client)->ListAgents(); agents.ok()) {
        VictimMemory best;
        for (const auto& a : *agents) {
          auto it = a.labels().find("memory_bytes");
          if (!a.alive() || it == a.labels().end()) continue;
          const double b = std::strtod(it->second.c_str(), nullptr);
          if (b > best.bytes) best = {"node " + a.agent_id() + "'s", b};
        }
        if (best.bytes > 0) return best;
      }
    }
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return {};
  return {"this machine's", static_cast<double>(pages) * static_cast<double>(page)};
}

// victim.cache as-is over data a victim node's memory could hold: whether the page cache holds it
// decides I/O figures, and nothing sets it. The data is sized here: paths that are not on this
// machine are said to be unsized (the results warn again with the node's own figures). "" when
// there is nothing to say.
static std::string CacheWarning(const experiment::CacheSpec& c, const GlobalOptions* g) {
  if (c.mode != "as-is" || c.paths.empty()) return "";
  std::error_code ec;
  double total = 0;
  std::vector<std::string> missing;
  for (const auto& p : c.paths) {
    if (!std::filesystem::exists(p, ec)) {
      missing.push_back(p);
      continue;
    }
    if (std::filesystem::is_regular_file(p, ec)) {
      total += static_cast<double>(std::filesystem::file_size(p, ec));
      continue;
    }
    for (auto it = std::filesystem::recursive_directory_iterator(
             p, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += it->file_size(ec);
    }
  }
  const char* fix =
      "set victim.cache {mode: cold or warm, paths: [...]} (docs/experiment-format.md)";
  if (missing.size() == c.paths.size()) {
    return "victim.cache is as-is and its paths (" + missing.front() +
           (missing.size() > 1 ? ", ..." : "") +
           ") are not on this machine, so whether a node's page cache could hold them is not "
           "known here (the results say, per node); " +
           fix;
  }
  const VictimMemory mem = VictimNodeMemory(g);
  if (mem.bytes <= 0 || total >= mem.bytes) return "";
  return FormatSize(total) + " under victim.cache.paths" +
         (missing.empty() ? "" : " (sized here; " + std::to_string(missing.size()) + " not here)") +
         " could sit in " + mem.where + " " + FormatSize(mem.bytes) +
         " of memory and victim.cache is as-is: whether it is already cached decides I/O "
         "figures; " +
         fix;
}

int CmdValidate(const GlobalOptions& g, const std::string& file, bool plan, const std::string& db) {
  auto spec = experiment::LoadExperimentFile(file, InjectorHooks());
  if (!spec.ok()) {
    fprintf(stderr, "%s\n", TerminalSafe(spec.error()).c_str());
    return kExitBadInput;
  }
  PrintPlan(*spec, file, plan ? PlanDetail::kTrials : PlanDetail::kNone, db, &g);
  return kExitOk;
}

void PrintPlan(const experiment::ExperimentSpec& loaded, const std::string& file, PlanDetail detail,
               const std::string& db, const GlobalOptions* g) {
  const experiment::ExperimentSpec* spec = &loaded;
  const bool plan = detail != PlanDetail::kNone;
  auto trials = experiment::ExpandPlan(*spec);
  int baselines = 0;
  for (const auto& t : trials) baselines += t.baseline;
  const size_t n_antagonists = spec->antagonists.size();
  printf("%s: ok — experiment '%s', %zu antagonist%s, %zu trial%s (%d baseline%s)\n",
         TerminalSafe(file).c_str(), TerminalSafe(spec->name).c_str(), n_antagonists,
         n_antagonists == 1 ? "" : "s", trials.size(), trials.size() == 1 ? "" : "s", baselines,
         baselines == 1 ? "" : "s");
  PrintPowerWarnings(spec->repetitions, baselines);
  if (std::string w = experiment::MissingSinglesWarning(*spec); !w.empty()) {
    printf("warning: %s\n", w.c_str());
  }
  if (plan) {
    printf("%s\n", experiment::VictimPlacementLine(*spec).c_str());
    if (std::string w = CacheWarning(spec->victim.cache, g); !w.empty())
      printf("warning: %s\n", w.c_str());
    printf(
        "victims run as: the agent's victim_user on each node (default nobody for an agent "
        "started as root; `codlctl agents` lists it); with `codlctl run` and no controller, "
        "as you (%s)\n",
        TerminalSafe(UserName(geteuid())).c_str());
    if (detail == PlanDetail::kTrials) {
      printf("%5s  %4s  %s\n", "trial", "rep", "pairing");
      for (const auto& t : trials)
        printf("%5d  %4d  %s\n", t.index + 1, t.repetition + 1, t.pairing.c_str());
    }
    // A crosstalk experiment's "victim" is its idle window: its length is known.
    const bool idle = spec->crosstalk_window_s > 0;
    const std::optional<double> previous = idle ? std::optional<double>(spec->crosstalk_window_s)
                                                : PreviousVictimSeconds(db, spec->name);
    const double victim_s = previous.value_or(10);
    double est = experiment::EstimateDurationSeconds(*spec, trials, victim_s);
    printf(
        "estimated duration: %s (assuming the victim runs ~%s%s; settle %s, cooldown %s per "
        "trial)\n",
        FormatEta(est).c_str(), FormatDuration(victim_s).c_str(),
        idle       ? ": the crosstalk idle window"
        : previous ? (", as in the last run in " + TerminalSafe(db)).c_str()
                   : (", a guess: no earlier run of it in " + TerminalSafe(db)).c_str(),
        FormatDuration(spec->settle_s).c_str(), FormatDuration(spec->cooldown_s).c_str());
    if (std::string w = experiment::ShortVictimWarning(*spec, victim_s, previous.has_value());
        !w.empty()) {
      printf("warning: %s\n", w.c_str());
    }
    // A tolerance search adds its trials after the plan: at most max_trials each, plus a
    // baseline per step (a step runs 2 or 3 trials).
    for (const auto& a : spec->antagonists) {
      if (!a.tolerance.enabled || a.workload) continue;
      const int most = a.tolerance.max_trials + (a.tolerance.max_trials + 1) / 2;
      printf(
          "tolerance search of %s: after the plan, up to %d more trials (max_trials %d and a "
          "baseline per step), about %s more at most\n",
          TerminalSafe(a.name).c_str(), most, a.tolerance.max_trials,
          FormatEta(most * (victim_s + spec->settle_s + spec->cooldown_s)).c_str());
    }
    // Adaptive: the plan above is the max-block plan; how far it will likely go.
    if (std::string a = AdaptiveRepetitionsEstimate(*spec, db); !a.empty()) {
      printf("%s\n", a.c_str());
    }
  }
}

int CmdRun(const GlobalOptions& g, const RunOptions& o) {
  auto yaml = ReadWholeFile(o.file);
  if (!yaml.ok()) {
    Note(g, "error", "codlctl run: " + yaml.error());
    return kExitBadInput;
  }
  // Validate locally first: bad input fails fast, before anything starts.
  auto spec = experiment::ParseExperiment(*yaml, o.file, InjectorHooks());
  if (!spec.ok()) {
    Note(g, "error", spec.error());
    return kExitBadInput;
  }
  return SubmitAndFollow(g, o, "run",
                         [&](ControllerClient*) -> Result<std::string> { return *yaml; });
}

int SubmitAndFollow(const GlobalOptions& g, const RunOptions& o, const std::string& verb,
                    const YamlForController& yaml_for) {
  auto lease = CheckRunOptions(g, o, verb);
  if (!lease) return kExitBadInput;
  InterruptHandler interrupts;
  EmbeddedCluster embedded;
  auto client = ConnectOrEmbed(g, o, *lease, &embedded);
  if (!client.ok())
    return client.code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailed;
  auto yaml = yaml_for(client->get());
  if (!yaml.ok()) {
    Note(g, "error", "codlctl " + verb + ": " + yaml.error());
    return yaml.code() == StatusCode::kUnavailable ? kExitUnreachable : kExitBadInput;
  }
  auto sub = (*client)->Submit(*yaml, o.file);
  if (!sub.ok()) {
    Note(g, "error", sub.error());
    return ExitCodeFor(sub.status());
  }
  const std::string id = sub->experiment_id();
  if (!o.quiet) {
    Note(g, "info", "experiment " + id + ": " + std::to_string(sub->total_trials()) + " trials");
    const std::string who =
        VictimUsersLine(client->get(), ConfiguredController(g.controller).empty());
    if (!who.empty()) Note(g, "info", who);
  }
  return FollowToEnd(g, o, client->get(), id, &interrupts);
}

int CmdResume(const GlobalOptions& g, const std::string& id, const RunOptions& o,
              bool retry_failed) {
  auto lease = CheckRunOptions(g, o, "resume");
  if (!lease) return kExitBadInput;
  if (ConfiguredController(g.controller).empty() && access(o.db.c_str(), F_OK) != 0) {
    Note(g, "error",
         "codlctl resume: no results database '" + o.db +
             "' (give the one the experiment ran with: --db FILE; or --controller ADDRESS)");
    return kExitBadInput;
  }
  InterruptHandler interrupts;
  EmbeddedCluster embedded;
  auto client = ConnectOrEmbed(g, o, *lease, &embedded);
  if (!client.ok())
    return client.code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailed;
  auto resumed = (*client)->Resume(id, retry_failed);
  if (!resumed.ok()) {
    Note(g, "error", "codlctl resume: " + resumed.error());
    return ExitCodeFor(resumed.status());
  }
  const int left = resumed->total_trials() - resumed->kept_trials();
  if (!o.quiet) {
    auto was = rpc::FromProto(resumed->previous_state());
    Note(g, "info",
         "experiment " + resumed->experiment_id() + " resumed (it was " +
             (was.ok() ? ToString(*was) : "unfinished") +
             "): " + std::to_string(resumed->kept_trials()) + " of " +
             std::to_string(resumed->total_trials()) + " trials kept, " + std::to_string(left) +
             " to run" +
             (retry_failed ? " (" + std::to_string(resumed->retried_trials()) +
                                 " failed ones as their next attempt)"
                           : ""));
  }
  return FollowToEnd(g, o, client->get(), resumed->experiment_id(), &interrupts);
}

int CmdSubmit(const GlobalOptions& g, const std::string& file, bool watch, bool quiet,
              bool reconnect) {
  auto yaml = ReadWholeFile(file);
  if (!yaml.ok()) {
    fprintf(stderr, "codlctl submit: %s\n", TerminalSafe(yaml.error()).c_str());
    return kExitBadInput;
  }
  auto spec = experiment::ParseExperiment(*yaml, file, InjectorHooks());
  if (!spec.ok()) {
    fprintf(stderr, "%s\n", TerminalSafe(spec.error()).c_str());
    return kExitBadInput;
  }
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl submit: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  auto sub = (*client)->Submit(*yaml, file);
  if (!sub.ok()) {
    fprintf(stderr, "%s\n", TerminalSafe(sub.error()).c_str());
    return ExitCodeFor(sub.status());
  }
  printf("%s\n", sub->experiment_id().c_str());
  fflush(stdout);
  // stderr, so that `ID=$(codlctl submit …)` still captures the id alone.
  if (const std::string who = VictimUsersLine(client->get(), false); !who.empty())
    fprintf(stderr, "%s\n", TerminalSafe(who).c_str());
  if (!watch) return kExitOk;
  InterruptHandler interrupts;
  ControllerClient* c = client->get();
  const std::string id = sub->experiment_id();
  interrupts.OnFirst([c, id] { (void)c->Cancel(id); });
  auto final = WatchToEnd(c, id, quiet, false, reconnect);
  if (!final.ok()) {
    fprintf(stderr, "codlctl submit: %s\n", TerminalSafe(final.error()).c_str());
    return interrupts.ExitCode(ExitCodeFor(final.status()));
  }
  int rc = ExitCodeFor(*final);
  if (rc == kExitOk) rc = MeasuredExitCode(c, "", id);
  return interrupts.ExitCode(rc);
}

int CmdWatch(const GlobalOptions& g, const std::string& id, const std::string& output, bool quiet,
             bool reconnect) {
  if (output != "table") return WatchRecords(g, id, output, reconnect);
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl watch: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  auto final = WatchToEnd(client->get(), id, quiet, false, reconnect);
  if (!final.ok()) {
    fprintf(stderr, "codlctl watch: %s\n", TerminalSafe(final.error()).c_str());
    return ExitCodeFor(final.status());
  }
  fprintf(stderr, "experiment %s %s\n", final->experiment_id().c_str(),
          rpc::StateName(*final).c_str());
  const int rc = ExitCodeFor(*final);
  return rc == kExitOk ? MeasuredExitCode(client->get(), "", final->experiment_id()) : rc;
}

int CmdCancel(const GlobalOptions& g, const std::string& id) {
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl cancel: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  auto r = (*client)->Cancel(id);
  if (!r.ok()) {
    fprintf(stderr, "codlctl cancel: %s\n", TerminalSafe(r.error()).c_str());
    return ExitCodeFor(r.status());
  }
  printf("%s\n", r->c_str());
  return kExitOk;
}

}  // namespace codl::cli
