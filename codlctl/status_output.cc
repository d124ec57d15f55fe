#include "codlctl/status_output.h"

#include "codlctl/progress_view.h"
#include "lib/common/process_token.h"
#include "lib/common/utf8.h"
#include "lib/rpc/records_proto.h"

namespace codl::cli {
namespace {

using experiment::Cell;

const std::vector<std::string> kStatusColumns = {"experiment_id",   "name",
                                                 "state",           "completed_trials",
                                                 "total_trials",    "failed_trials",
                                                 "current_pairing", "eta_s",
                                                 "victim_step",     "victim_step_time_s",
                                                 "created_unix_ms", "finished_unix_ms",
                                                 "error",           "precision",
                                                 "stop_reason",     "waiting_for"};

std::vector<Cell> StatusCells(const v1::ExperimentStatus& s) {
  // The controller sends 0 for "not known" in the live fields: missing, not zero.
  auto known = [](double v) { return v > 0 ? Cell::Number(v) : Cell::Missing(); };
  return {Cell::Text(s.experiment_id()),
          Cell::Text(s.name()),
          Cell::Text(rpc::StateName(s)),
          Cell::Int(s.completed_trials()),
          Cell::Int(s.total_trials()),
          Cell::Int(s.failed_trials()),
          Cell::Text(s.current_pairing()),
          known(s.eta_s()),
          known(static_cast<double>(s.victim_step())),
          known(s.victim_step_time_s()),
          known(static_cast<double>(s.created_unix_ms())),
          known(static_cast<double>(s.finished_unix_ms())),
          Cell::Text(s.error()),
          Cell::Text(s.precision()),
          Cell::Text(s.stop_reason()),
          Cell::Text(s.waiting_for())};
}

// The victim's dataset generation: both missing when none is under way (or was reported).
const std::vector<std::string> kDatasetColumns = {"dataset_generated", "dataset_total"};

std::vector<Cell> DatasetCells(const v1::ExperimentStatus& s) {
  if (s.dataset_total() <= 0) return {Cell::Missing(), Cell::Missing()};
  return {Cell::Int(s.dataset_generated()), Cell::Int(s.dataset_total())};
}

}  // namespace

std::string EventKind(const v1::ExperimentEvent& event) {
  if (event.kind_case() == v1::ExperimentEvent::KIND_NOT_SET) return "";
  return event.GetDescriptor()->FindFieldByNumber(event.kind_case())->name();
}

void ShowOwnerGone(ExperimentRecord* e) {
  if (e->state != ExperimentState::kRunning && e->state != ExperimentState::kQueued) return;
  if (ProcessTokenAlive(e->owner)) return;
  e->error = std::string("its process is gone (it was ") + ToString(e->state) + ")";
  e->state = ExperimentState::kInterrupted;
}

v1::ExperimentStatus StatusFromRecords(const ExperimentRecord& e,
                                       const std::vector<TrialRecord>& trials) {
  v1::ExperimentStatus s;
  s.set_experiment_id(e.id);
  s.set_name(e.name);
  rpc::SetState(e.state, &s);
  s.set_error(e.error);
  s.set_total_trials(e.total_trials);
  int committed = 0, failed = 0;
  for (const auto& t : trials) {
    committed += Committed(t.state);  // one count everywhere: cut-off trials are not in it
    failed += t.state == TrialState::kFailed;
  }
  s.set_completed_trials(committed);
  s.set_failed_trials(failed);
  s.set_created_unix_ms(e.created_unix_ms);
  s.set_finished_unix_ms(e.finished_unix_ms);
  s.set_stop_reason(e.stop_reason);
  s.set_submitter(e.submitter);
  return s;
}

std::string StatusLine(const v1::ExperimentStatus& s) {
  // Names, pairings and errors are the submitter's and victims' bytes: escaped for the terminal.
  std::string line = "experiment " + TerminalSafe(s.experiment_id()) + " (" +
                     TerminalSafe(s.name()) + "): " + rpc::StateName(s) +
                     (s.waiting_for().empty() ? "" : ": " + TerminalSafe(s.waiting_for())) + ", " +
                     std::to_string(s.completed_trials()) + "/" + std::to_string(s.total_trials()) +
                     " trials, " + std::to_string(s.failed_trials()) + " failed";
  if (!s.current_pairing().empty())
    line += ", now " + TerminalSafe(s.current_pairing()) + ", ETA " + FormatEta(s.eta_s());
  if (!s.error().empty()) line += " — " + TerminalSafe(s.error());
  if (!s.submitter().empty()) line += "; submitted by " + TerminalSafe(s.submitter());
  return line + TerminalSafe(AdaptiveNote(s));
}

// Who submitted it: last, so that every earlier column keeps its place. Missing when unknown.
Cell SubmitterCell(const v1::ExperimentStatus& s) {
  return s.submitter().empty() ? Cell::Missing() : Cell::Text(s.submitter());
}

experiment::TidyTable StatusTable(const std::vector<v1::ExperimentStatus>& statuses) {
  experiment::TidyTable t;
  t.columns = kStatusColumns;
  t.columns.insert(t.columns.end(), kDatasetColumns.begin(), kDatasetColumns.end());
  t.columns.push_back("submitter");
  for (const auto& s : statuses) {
    std::vector<Cell> row = StatusCells(s);
    for (Cell& c : DatasetCells(s)) row.push_back(std::move(c));
    row.push_back(SubmitterCell(s));
    t.rows.push_back(std::move(row));
  }
  return t;
}

experiment::TidyTable WatchTable(const v1::ExperimentEvent& event, int64_t ts_unix_ms) {
  experiment::TidyTable t;
  t.columns = kStatusColumns;
  t.columns.insert(t.columns.begin(), "ts_unix_ms");
  t.columns.push_back("message");
  t.columns.insert(t.columns.end(), kDatasetColumns.begin(), kDatasetColumns.end());
  t.columns.push_back("event");
  t.columns.push_back("submitter");
  std::vector<Cell> row = StatusCells(event.status());
  row.insert(row.begin(), Cell::Int(ts_unix_ms));
  row.push_back(Cell::Text(event.message()));
  for (Cell& c : DatasetCells(event.status())) row.push_back(std::move(c));
  const std::string kind = EventKind(event);
  row.push_back(kind.empty() ? Cell::Missing() : Cell::Text(kind));
  row.push_back(SubmitterCell(event.status()));
  t.rows.push_back(std::move(row));
  return t;
}

std::string RenderRecords(const experiment::TidyTable& table, const std::string& output,
                          bool header) {
  if (output == "json") return experiment::RenderJsonLines(table);
  std::string csv = experiment::RenderCsv(table);
  return header ? csv : csv.substr(csv.find('\n') + 1);
}

}  // namespace codl::cli
