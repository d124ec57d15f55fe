#include "codlctl/results_output.h"
#include "codlctl/status_output.h"

#include <sys/stat.h>

#include <fstream>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "injectors/core/registry.h"
#include "lib/analysis/compare.h"
#include "lib/analysis/profile.h"
#include "lib/analysis/results.h"
#include "lib/analysis/trial_rows.h"
#include "lib/common/utf8.h"
#include "lib/report/compare_section.h"
#include "lib/report/report.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"

namespace codl::cli {
namespace {

// The metric named by --metric, else the experiment's victim.metric. The YAML was validated when
// submitted; one that no longer parses (an older or newer format, a results file written by
// something else) falls back to the default, and says so.
experiment::SummarizeOptions OptionsFor(const ExperimentRecord& e, const std::string& metric) {
  const experiment::StoredExperiment stored = experiment::ReadStoredExperiment(e);
  if (!metric.empty()) {
    auto m = experiment::ParseTrialMetric(metric);  // checked by the command line already
    const experiment::TrialMetric chosen = m.ok() ? *m : experiment::TrialMetric{};
    return stored.Options(&chosen);
  }
  if (!stored.spec) {
    fprintf(stderr,
            "codlctl: warning: experiment %s: its stored experiment file does not parse (%s); "
            "the default metric is used\n",
            TerminalSafe(e.id).c_str(), TerminalSafe(stored.parse_error).c_str());
  }
  return stored.Options();
}

// Writes `text` whole, ending in a newline.
void Emit(const std::string& text, FILE* out) {
  fputs(text.c_str(), out);
  if (!text.empty() && text.back() != '\n') fputc('\n', out);
  fflush(out);
}

int WriteComparisonReport(const experiment::Comparison& c, const std::string& path) {
  std::ofstream file(path);
  if (!file || !(file << report::RenderComparePage(c))) {
    fprintf(stderr, "codlctl compare: cannot write '%s'\n", path.c_str());
    return kExitFailed;
  }
  fprintf(stderr, "comparison written to %s\n", path.c_str());
  return kExitOk;
}

}  // namespace

Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> LoadRecords(ControllerClient* client,
                                                                          const std::string& db,
                                                                          const std::string& id) {
  if (!db.empty()) {
    auto store = store::Store::OpenExisting(db);
    if (!store.ok()) return store.status();
    auto e = (*store)->GetExperiment(id.empty() ? "latest" : id);
    if (!e.ok()) return e.status();
    ShowOwnerGone(&*e);
    auto t = (*store)->GetTrials(e->id, true);
    if (!t.ok()) return t.status();
    return std::make_pair(std::move(e.value()), std::move(t.value()));
  }
  return client->GetResults(id.empty() ? "latest" : id);
}

int MeasuredExitCode(const std::string& id, const std::string& nothing_measured) {
  if (nothing_measured.empty()) return kExitOk;
  fprintf(stderr, "codlctl: experiment %s measured nothing: %s\n", id.c_str(),
          nothing_measured.c_str());
  return kExitFailed;
}

int MeasuredExitCode(ControllerClient* client, const std::string& db, const std::string& id) {
  auto rec = LoadRecords(client, db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  return MeasuredExitCode(rec->first.id, experiment::NothingMeasured(experiment::Summarize(
                                             rec->first, rec->second, OptionsFor(rec->first, ""))));
}

int PrintResults(ControllerClient* client, const std::string& db, const std::string& id,
                 const std::string& output, FILE* out, const std::string& metric,
                 std::string* nothing_measured) {
  auto rec = LoadRecords(client, db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl results: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  auto results = experiment::Summarize(rec->first, rec->second, OptionsFor(rec->first, metric));
  if (nothing_measured) *nothing_measured = experiment::NothingMeasured(results);
  std::string text;
  if (output == "csv") text = experiment::FormatCsv(results);
  else if (output == "json") text = experiment::FormatJson(results);
  else if (output == "interactions-csv") text = experiment::FormatInteractionsCsv(results);
  else text = experiment::FormatTable(results, output == "wide");
  Emit(text, out);
  return kExitOk;
}

int PrintTidy(ControllerClient* client, const std::string& db, const std::string& id,
              const std::string& kind, const std::string& output, FILE* out,
              const std::string& metric) {
  auto rec = LoadRecords(client, db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl results: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  const auto& [e, trials] = *rec;
  const experiment::TidyTable table =
      kind == "phases"      ? experiment::PhasesTable(e, trials)
      : kind == "ranks"     ? experiment::RanksTable(e, trials)
      : kind == "telemetry" ? experiment::NodeTelemetryTable(e, trials)
      : kind == "phases-summary"
          ? experiment::PhaseSummaryTable(experiment::Summarize(e, trials, OptionsFor(e, metric)))
          : experiment::TrialsTable(e, trials, OptionsFor(e, metric).metric);
  Emit(experiment::Render(table, output), out);
  return kExitOk;
}

int PrintComparison(ControllerClient* client, const std::string& db,
                    const std::vector<std::string>& ids, const std::string& output,
                    const std::string& metric, const std::string& report, FILE* out) {
  std::vector<experiment::CompareInput> inputs;
  for (const auto& id : ids) {
    auto rec = LoadRecords(client, db, id);
    if (!rec.ok()) {
      fprintf(stderr, "codlctl compare: %s: %s\n", id.c_str(), TerminalSafe(rec.error()).c_str());
      return ExitCodeFor(rec.status());
    }
    inputs.push_back({std::move(rec->first), std::move(rec->second)});
  }
  // One metric for all: --metric, else the first experiment's victim.metric.
  const experiment::Comparison c =
      experiment::Compare(inputs, OptionsFor(inputs.front().experiment, metric).metric);
  if (output == "json") Emit(experiment::FormatComparisonJson(c), out);
  else if (output == "csv") Emit(experiment::RenderCsv(experiment::ComparisonTable(c)), out);
  else Emit(experiment::FormatComparison(c), out);
  if (!report.empty()) return WriteComparisonReport(c, report);
  return kExitOk;
}

}  // namespace codl::cli

#include <fstream>

#include "lib/report/figures.h"
#include "lib/report/report.h"

namespace codl::cli {

std::map<std::string, std::string> InjectorResources() {
  std::map<std::string, std::string> out;
  for (const auto& name : injectors::InjectorNames()) {
    if (const auto* d = injectors::FindDescriptor(name)) out[name] = d->resource;
  }
  return out;
}

int PrintProfile(ControllerClient* client, const std::string& db, const std::string& id,
                 const std::string& output, FILE* out) {
  auto rec = LoadRecords(client, db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl profile: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  const auto results = experiment::Summarize(rec->first, rec->second, OptionsFor(rec->first, ""));
  const auto profile = experiment::BuildProfile(results, experiment::ProfileAntagonists(results),
                                                InjectorResources());
  Emit(output == "json"  ? experiment::FormatProfileJson(profile)
       : output == "csv" ? experiment::FormatProfileCsv(profile)
                         : experiment::FormatProfileTable(profile),
       out);
  return kExitOk;
}

int PrintCrosstalk(ControllerClient* client, const std::string& db, const std::string& id,
                   const std::string& output, FILE* out) {
  auto rec = LoadRecords(client, db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl crosstalk: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  const auto results = experiment::Summarize(rec->first, rec->second, OptionsFor(rec->first, ""));
  if (!results.crosstalk) {
    fprintf(stderr,
            "codlctl crosstalk: experiment %s is not a cross-talk experiment (no `crosstalk:` "
            "in its YAML): codlctl results %s shows its figures\n",
            TerminalSafe(results.experiment_id).c_str(),
            TerminalSafe(results.experiment_id).c_str());
    return kExitBadInput;
  }
  const auto& m = results.crosstalk_matrix;
  Emit(output == "json"  ? experiment::FormatCrosstalkJson(m)
       : output == "csv" ? experiment::FormatCrosstalkCsv(m)
                         : experiment::FormatCrosstalkTable(m),
       out);
  return kExitOk;
}

int WriteReport(ControllerClient* client, const std::string& db, const std::string& id,
                const std::string& path, const std::string& figures) {
  auto rec = LoadRecords(client, db, id);
  if (!rec.ok()) {
    fprintf(stderr, "codlctl report: %s\n", TerminalSafe(rec.error()).c_str());
    return ExitCodeFor(rec.status());
  }
  auto results = experiment::Summarize(rec->first, rec->second, OptionsFor(rec->first, ""));
  if (!figures.empty()) {
    auto written = report::WriteFigures(figures, report::RenderFigures(results, rec->second));
    if (!written.ok()) {
      fprintf(stderr, "codlctl report: %s\n", TerminalSafe(written.error()).c_str());
      return ExitCodeFor(written.status());
    }
    fprintf(stderr, "%zu figure files written to %s\n", written->size(), figures.c_str());
    if (path.empty()) return kExitOk;
  }
  std::string html =
      report::RenderHtmlReport(rec->first, rec->second, results, InjectorResources());
  std::ofstream out(path);
  if (!out || !(out << html)) {
    fprintf(stderr, "codlctl report: cannot write '%s'\n", path.c_str());
    return kExitFailed;
  }
  fprintf(stderr, "report written to %s\n", path.c_str());
  return kExitOk;
}

}  // namespace codl::cli
