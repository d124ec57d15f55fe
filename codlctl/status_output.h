// `codlctl status` and `codlctl watch` as records: `-o json` (one JSON object per line) and
// `-o csv` (a header, then one row per experiment or, for watch, per progress update). The
// columns are a public interface (docs/results.md, "Status and watch records").
#pragma once

#include <string>
#include <vector>

#include "codl/v1/controller.pb.h"
#include "lib/analysis/tidy.h"
#include "lib/common/records.h"

namespace codl::cli {

// An experiment's state as the controller reports it; from a database, the recorded trials
// stand in for the completed ones.
// Read from a database file: an experiment stored `queued` or `running` by a process that is
// gone (a killed `codlctl run`, a crashed controller) is shown as what it is, `interrupted`
// with the error "its process is gone …" (the store marks it so once a controller or
// `codlctl run` opens the file again). Others are left as they are.
void ShowOwnerGone(ExperimentRecord* e);

v1::ExperimentStatus StatusFromRecords(const ExperimentRecord& e,
                                       const std::vector<TrialRecord>& trials);

// Columns: experiment_id, name, state, completed_trials, total_trials, failed_trials,
// current_pairing, eta_s, victim_step, victim_step_time_s, created_unix_ms, finished_unix_ms,
// error, precision, stop_reason, then dataset_generated, dataset_total (the victim generating
// its dataset; missing when it is not); watch rows add ts_unix_ms (when the update arrived)
// first, message before the dataset columns and event (EventKind) last.
// The event's kind as its field name in codl.v1.ExperimentEvent ("trial_done", "calibrating",
// "note", ...); "" for a status update (or a controller older than typed events).
std::string EventKind(const v1::ExperimentEvent& event);
experiment::TidyTable StatusTable(const std::vector<v1::ExperimentStatus>& statuses);
// `codlctl status ID`'s line: "experiment ID (NAME): STATE, 3/8 trials, 0 failed, now PAIRING,
// ETA 1m05s — ERROR", every text from outside escaped for the terminal (TerminalSafe).
std::string StatusLine(const v1::ExperimentStatus& s);
experiment::TidyTable WatchTable(const v1::ExperimentEvent& event, int64_t ts_unix_ms);

// "json" or "csv" records of `table`; the CSV header only when `header`.
std::string RenderRecords(const experiment::TidyTable& table, const std::string& output,
                          bool header);

}  // namespace codl::cli
