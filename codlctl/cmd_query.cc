// status, results, agents, calibrate: commands that read (or refresh) what the controller knows.
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/progress_view.h"
#include "codlctl/results_output.h"
#include "codlctl/status_output.h"
#include "codlctl/watch_follow.h"
#include "injectors/core/registry.h"
#include "lib/analysis/trace_merge.h"
#include "lib/common/compress.h"
#include "lib/common/csv.h"
#include "lib/common/json_line.h"
#include "lib/common/tunables.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"
#include "lib/rpc/records_proto.h"
#include "lib/spec/trial_metric.h"
#include "lib/store/store.h"

namespace codl::cli {

Result<std::unique_ptr<ControllerClient>> ConnectController(const GlobalOptions& g) {
  std::string address = ConfiguredController(g.controller);
  if (address.empty()) address = tunables::kDefaultControllerAddress;
  return ControllerClient::Connect(rpc::Endpoint{address, g.tls});
}

namespace {

std::string FormatTimeMs(int64_t ms) {
  if (ms <= 0) return "-";
  time_t t = ms / 1000;
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}
}  // namespace

namespace {

// Status from a database file: every experiment (no id) or one.
int StatusFromDb(const std::string& id, const std::string& db, const std::string& output) {
  auto store = store::Store::Open(db);
  if (!store.ok()) {
    fprintf(stderr, "codlctl status: %s\n", TerminalSafe(store.error()).c_str());
    return kExitBadInput;
  }
  std::vector<ExperimentRecord> experiments;
  if (id.empty()) {
    auto all = (*store)->ListExperiments();
    if (!all.ok()) {
      fprintf(stderr, "codlctl status: %s\n", TerminalSafe(all.error()).c_str());
      return kExitFailed;
    }
    experiments = std::move(*all);
  } else {
    auto e = (*store)->GetExperiment(id);
    if (!e.ok()) {
      fprintf(stderr, "codlctl status: %s\n", TerminalSafe(e.error()).c_str());
      return kExitBadInput;
    }
    experiments.push_back(std::move(*e));
  }
  std::vector<v1::ExperimentStatus> statuses;
  for (auto& e : experiments) {
    ShowOwnerGone(&e);
    auto trials = (*store)->GetTrials(e.id, false);
    statuses.push_back(StatusFromRecords(e, trials.ok() ? *trials : std::vector<TrialRecord>{}));
  }
  if (output != "table") {
    fputs(RenderRecords(StatusTable(statuses), output, true).c_str(), stdout);
    return kExitOk;
  }
  if (id.empty()) {
    printf("%-24s %-24s %-12s %7s  %s\n", "ID", "NAME", "STATE", "TRIALS", "CREATED");
    for (const auto& s : statuses)
      printf("%-24s %-24s %-12s %3d/%-3d  %s\n", TerminalSafe(s.experiment_id()).c_str(),
             TerminalSafe(s.name()).c_str(), rpc::StateName(s).c_str(), s.completed_trials(),
             s.total_trials(), FormatTimeMs(s.created_unix_ms()).c_str());
    return kExitOk;
  }
  printf("%s\n", StatusLine(statuses.front()).c_str());
  return kExitOk;
}

bool ValidOutput(const char* command, const std::string& output) {
  if (output == "table" || output == "json" || output == "csv") return true;
  fprintf(stderr, "codlctl %s: -o '%s': expected table, json or csv\n", command, output.c_str());
  return false;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int CmdStatus(const GlobalOptions& g, const std::string& id, const std::string& db,
              const std::string& output) {
  if (!ValidOutput("status", output)) return kExitBadInput;
  if (!db.empty()) return StatusFromDb(id, db, output);
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl status: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  auto s = (*client)->GetStatus(id.empty() ? "latest" : id);
  if (!s.ok()) {
    fprintf(stderr, "codlctl status: %s\n", TerminalSafe(s.error()).c_str());
    return ExitCodeFor(s.status());
  }
  if (output != "table") {
    fputs(RenderRecords(StatusTable({*s}), output, true).c_str(), stdout);
    return kExitOk;
  }
  printf("%s\n", StatusLine(*s).c_str());
  return kExitOk;
}

int WatchRecords(const GlobalOptions& g, const std::string& id, const std::string& output,
                 bool reconnect) {
  if (!ValidOutput("watch", output)) return kExitBadInput;
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl watch: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  bool header = true;
  v1::ExperimentStatus last;
  // One record per progress update, flushed at once so that a pipe reader sees it live.
  FollowOptions follow{reconnect, [](const std::string& line) {
                         fprintf(stderr, "%s\n", TerminalSafe(line).c_str());
                       }};
  Status s = FollowExperiment(
      client->get(), id,
      [&](const v1::ExperimentEvent& ev) {
        fputs(RenderRecords(WatchTable(ev, NowUnixMs()), output, header).c_str(), stdout);
        fflush(stdout);
        header = false;
        last = ev.status();
      },
      follow);
  if (!s.ok()) {
    fprintf(stderr, "codlctl watch: %s\n", TerminalSafe(s.error()).c_str());
    return ExitCodeFor(s);
  }
  return ExitCodeFor(last);
}

int CmdResults(const GlobalOptions& g, const std::string& id, const std::string& db,
               const std::string& output, const std::string& metric, const std::string& tidy) {
  if ((output == "interactions-csv" || output == "wide") && !tidy.empty()) {
    fprintf(stderr,
            "codlctl results: -o %s is a view of the summary table; --%s takes -o table, json "
            "or csv\n",
            output.c_str(), tidy.c_str());
    return kExitBadInput;
  }
  if (output != "interactions-csv" && output != "wide" && !ValidOutput("results", output))
    return kExitBadInput;
  if (auto m = experiment::ParseTrialMetric(metric); !metric.empty() && !m.ok()) {
    fprintf(stderr, "codlctl results: --metric: %s\n", TerminalSafe(m.error()).c_str());
    return kExitBadInput;
  }
  std::unique_ptr<ControllerClient> client;
  if (db.empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) {
      fprintf(stderr, "codlctl results: %s\n", TerminalSafe(c.error()).c_str());
      return kExitBadInput;
    }
    client = std::move(c.value());
  }
  if (!tidy.empty()) return PrintTidy(client.get(), db, id, tidy, output, stdout, metric);
  return PrintResults(client.get(), db, id, output, stdout, metric);
}

namespace {

// How the agent places children and accounts their CPU time (its `placement` label):
// cgroup-v2 (delegated subtree) or affinity; "-" for agents that predate it.
std::string Placement(const v1::AgentInfo& a) {
  auto it = a.labels().find("placement");
  return it == a.labels().end() ? "-" : it->second;
}

std::map<std::string, std::string> Labels(const v1::AgentInfo& a) {
  return {a.labels().begin(), a.labels().end()};
}

// Labels come from the agents: escaped for JSON, neutralized for spreadsheets, made safe for
// terminals.
void PrintAgentsJson(const std::vector<v1::AgentInfo>& agents) {
  for (const auto& a : agents) {
    JsonLine j;
    j.Add("agent_id", a.agent_id())
        .Add("address", a.address())
        .Add("alive", a.alive())
        .Add("clock_offset_s", a.clock_offset_s())
        .Add("running_antagonists", a.running_antagonists())
        .Add("placement", Placement(a))
        .AddObject("labels", Labels(a));
    printf("%s\n", j.str().c_str());
  }
}

void PrintAgentsCsv(const std::vector<v1::AgentInfo>& agents) {
  printf("agent_id,alive,address,clock_offset_s,running_antagonists,placement,labels\n");
  for (const auto& a : agents) {
    std::string labels;
    for (const auto& [k, v] : Labels(a)) labels += (labels.empty() ? "" : ";") + k + "=" + v;
    printf("%s,%d,%s,%.6f,%d,%s,%s\n", CsvField(CsvText(a.agent_id())).c_str(), a.alive() ? 1 : 0,
           CsvField(CsvText(a.address())).c_str(), a.clock_offset_s(), a.running_antagonists(),
           CsvField(CsvText(Placement(a))).c_str(), CsvField(CsvText(labels)).c_str());
  }
}

// `wide` (-o wide): every label on the agent's line; else they wrap within 120 columns, under
// the LABELS column.
void PrintAgentsTable(const std::vector<v1::AgentInfo>& agents, bool wide) {
  printf("%-20s %-6s %-28s %10s %4s %-9s  %s\n", "AGENT", "ALIVE", "ADDRESS", "OFFSET", "ANT",
         "PLACEMENT", "LABELS");
  constexpr size_t kLabelsColumn = 84;  // where LABELS starts, by the widths above
  const std::string indent(kLabelsColumn, ' ');
  for (const auto& a : agents) {
    std::string labels;
    for (const auto& [k, v] : Labels(a)) labels += (labels.empty() ? "" : " ") + k + "=" + v;
    labels = TerminalSafe(labels);
    if (!wide) {
      std::string wrapped;
      for (char ch : WrapWords(labels, 120 - kLabelsColumn, "")) {
        wrapped += ch;
        if (ch == '\n') wrapped += indent;
      }
      labels = wrapped;
    }
    printf("%-20s %-6s %-28s %8.2fms %4d %-9s  %s\n", TerminalSafe(a.agent_id()).c_str(),
           a.alive() ? "yes" : "NO", TerminalSafe(a.address()).c_str(), a.clock_offset_s() * 1e3,
           a.running_antagonists(), TerminalSafe(Placement(a)).c_str(), labels.c_str());
  }
}

}  // namespace

int CmdAgents(const GlobalOptions& g, const std::string& output) {
  if (output != "table" && output != "wide" && output != "json" && output != "csv") {
    fprintf(stderr, "codlctl agents: -o '%s': expected table, wide, json or csv\n", output.c_str());
    return kExitBadInput;
  }
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl agents: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  auto agents = (*client)->ListAgents();
  if (!agents.ok()) {
    fprintf(stderr, "codlctl agents: %s\n", TerminalSafe(agents.error()).c_str());
    return ExitCodeFor(agents.status());
  }
  const std::vector<v1::AgentInfo> list(agents->begin(), agents->end());
  if (output == "json") PrintAgentsJson(list);
  else if (output == "csv") PrintAgentsCsv(list);
  else PrintAgentsTable(list, output == "wide");
  return kExitOk;
}

int CmdTrace(const GlobalOptions& g, const std::string& id, const std::string& db, int trial,
             const std::string& output) {
  if (trial < 1) {
    fprintf(stderr, "codlctl trace: --trial %d: trials are numbered from 1\n", trial);
    return kExitBadInput;
  }
  std::unique_ptr<ControllerClient> client;
  if (db.empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) {
      fprintf(stderr, "codlctl trace: %s\n", TerminalSafe(c.error()).c_str());
      return kExitBadInput;
    }
    client = std::move(c.value());
  }
  auto rec = LoadRecords(client.get(), db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl trace: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  const auto& [e, trials] = *rec;
  const TrialRecord* t = nullptr;
  for (const auto& x : trials) {
    if (x.index == trial - 1) t = &x;
  }
  if (t == nullptr) {
    fprintf(stderr, "codlctl trace: experiment %s has no trial %d (it has %zu; numbered from 1)\n",
            e.id.c_str(), trial, trials.size());
    return kExitBadInput;
  }
  store::TrialTrace stored;
  bool found = false;
  if (!db.empty()) {
    auto store = store::Store::OpenExisting(db);
    if (!store.ok()) {
      fprintf(stderr, "codlctl trace: %s\n", TerminalSafe(store.error()).c_str());
      return ExitCodeFor(store.status());
    }
    auto x = (*store)->GetTrialTrace(e.id, t->index);
    if (!x.ok()) {
      fprintf(stderr, "codlctl trace: %s\n", TerminalSafe(x.error()).c_str());
      return ExitCodeFor(x.status());
    }
    if (*x) {
      stored = std::move(**x);
      found = true;
    }
  } else {
    auto x = client->GetTrialTrace(e.id, t->index);
    if (!x.ok()) {
      fprintf(stderr, "codlctl trace: %s\n", TerminalSafe(x.error()).c_str());
      return ExitCodeFor(x.status());
    }
    found = x->found();
    stored.raw_bytes = x->raw_bytes();
    stored.zlib = x->trace_zlib();
  }
  if (!found) {
    fprintf(stderr,
            "codlctl trace: trial %d (%s) of experiment %s has no profiler trace: `victim.trace: "
            "{steps: K}` takes one in the first trial of each pairing, with a victim run by "
            "`python3 -m codl.run`\n",
            trial, TerminalSafe(t->pairing).c_str(), e.id.c_str());
    return kExitFailed;
  }
  auto json = ZlibDecompress(stored.zlib, 512u << 20);
  if (!json.ok()) {
    fprintf(stderr, "codlctl trace: the stored trace cannot be read: %s\n", json.error().c_str());
    return kExitFailed;
  }
  auto merged = experiment::MergeTraceWithAntagonists(*json, *t);
  if (!merged.ok()) {
    fprintf(stderr, "codlctl trace: %s\n", TerminalSafe(merged.error()).c_str());
    return kExitFailed;
  }
  if (output == "-") {
    fwrite(merged->json.data(), 1, merged->json.size(), stdout);
    fputc('\n', stdout);
  } else {
    std::ofstream f(output, std::ios::binary | std::ios::trunc);
    if (!f || !(f << merged->json << "\n")) {
      fprintf(stderr, "codlctl trace: cannot write '%s'\n", TerminalSafe(output).c_str());
      return kExitFailed;
    }
  }
  fprintf(stderr,
          "trace of trial %d (%s) written to %s: %s; open it in https://ui.perfetto.dev or "
          "chrome://tracing\n",
          trial, TerminalSafe(t->pairing).c_str(), output == "-" ? "stdout" : output.c_str(),
          merged->note.c_str());
  return kExitOk;
}

int CmdCalibrate(const GlobalOptions& g, const std::string& injector,
                 const std::map<std::string, std::string>& options, const std::string& agent,
                 const std::string& duration) {
  if (std::string e = injectors::ValidateInjectorName(injector).message(); !e.empty()) {
    fprintf(stderr, "codlctl calibrate: %s\n", e.c_str());
    return kExitBadInput;
  }
  if (std::string e = injectors::ValidateOptions(injector, options).message(); !e.empty()) {
    fprintf(stderr, "codlctl calibrate: %s\n", e.c_str());
    return kExitBadInput;
  }
  auto d = ParseDuration(duration);
  if (!d.ok() || *d <= 0) {
    fprintf(stderr, "codlctl calibrate: --duration: %s\n",
            d.ok() ? "must be > 0" : TerminalSafe(d.error()).c_str());
    return kExitBadInput;
  }
  auto client = ConnectController(g);
  if (!client.ok()) {
    fprintf(stderr, "codlctl calibrate: %s\n", TerminalSafe(client.error()).c_str());
    return kExitBadInput;
  }
  auto r = (*client)->Calibrate(agent, injector, options, *d);
  if (!r.ok()) {
    fprintf(stderr, "codlctl calibrate: %s\n", TerminalSafe(r.error()).c_str());
    return ExitCodeFor(r.status());
  }
  int rc = kExitOk;
  for (const auto& e : r->entries()) {
    if (!e.error().empty()) {
      printf("%-20s error: %s\n", e.agent_id().c_str(), TerminalSafe(e.error()).c_str());
      rc = kExitFailed;
    } else {
      printf("%-20s peak %s (%.6g %s), cached for experiments\n", e.agent_id().c_str(),
             FormatRate(e.peak_rate(), e.unit()).c_str(), e.peak_rate(), e.unit().c_str());
    }
  }
  return rc;
}

}  // namespace codl::cli
