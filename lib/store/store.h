// Store: experiments, trials, victim steps, antagonist samples and calibrations in SQLite
// (WAL, versioned migrations). Every SaveTrial is one transaction, committed before it returns,
// so a crash never loses a completed trial. Thread-safe.
//
// Several processes may open the same file: the controller writes while `codlctl results --db
// FILE` reads (WAL readers never block the writer; busy_timeout covers the short write locks).
// Errors name the database file and carry SQLite's message; nothing throws.
// Schema: store/migrations.cc.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/records.h"
#include "lib/common/result.h"

struct sqlite3;

namespace codl::store {

// A trial's profiler trace as stored: zlib-compressed Chrome-trace JSON and its size unpacked.
struct TrialTrace {
  int64_t raw_bytes = 0;
  std::string zlib;
};

class Store {
 public:
  // Opens (creating if needed) and migrates the database at `path` to the latest schema.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  // Like Open, for readers: a missing file is NotFound instead of a new, empty database.
  static Result<std::unique_ptr<Store>> OpenExisting(const std::string& path);
  // Tests only: like Open, but migrates no further than `schema_version`, to build the old
  // databases that migration tests then reopen with Open.
  static Result<std::unique_ptr<Store>> OpenAtSchemaVersionForTesting(const std::string& path,
                                                                      int schema_version);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int SchemaVersion();  // latest applied migration (-1 if it cannot be read)
  static int LatestSchemaVersion();
  const std::string& path() const { return path_; }

  // Keeps a reserve file, `PATH-reserve` (kReserveBytes, allocated), beside the database, so
  // that when its file system fills up an experiment's final state can still be written:
  // UpdateExperiment to a final state that fails for a full disk frees the reserve and tries
  // once more. The writer (the controller) calls it at start; ResourceExhausted when the space
  // is not there (the store works without it).
  Status KeepReserve();
  static constexpr int64_t kReserveBytes = 1 << 20;

  // Fails if the id exists, is empty, or is "latest" (reserved for GetExperiment).
  Status CreateExperiment(const ExperimentRecord& e);
  // `error_code`: a failed run's kind of failure (ExperimentRecord::error_code).
  Status UpdateExperiment(const std::string& id, ExperimentState state, const std::string& error,
                          int64_t finished_unix_ms, StatusCode error_code = StatusCode::kOk);
  // Replaces the experiment's provenance (a JSON object, docs/results.md "provenance").
  Status SetProvenance(const std::string& id, const std::string& provenance_json);
  // Adaptive repetitions: why the controller stopped running blocks (ExperimentRecord::
  // stop_reason).
  Status SetStopReason(const std::string& id, const std::string& reason);
  Result<ExperimentRecord> GetExperiment(const std::string& id);  // id or "latest"
  Result<std::vector<ExperimentRecord>> ListExperiments();        // newest first
  // The id of the newest experiment `submitter` submitted (SameSubmitter); nullopt when none.
  Result<std::optional<std::string>> LatestExperimentOf(const std::string& submitter);
  // Experiments left queued/running by a process that is gone (the owner CreateExperiment and
  // UpdateExperiment record; a live one's rows are left alone, so two `codlctl run` may share a
  // file): running ones are marked interrupted (error "controller stopped while the experiment
  // ran"; their running trials cancelled), and so are queued ones unless `keep_queued`, in
  // which case this process takes them over to run them again (a durable queue). Ids oldest
  // first. finished_unix_ms is left as it was: the end time is unknown.
  // The error MarkUnfinishedInterrupted gives the trials it finds running (cut off by the end
  // of their controller): a resume reads them as FailureKind::kControllerRestart.
  static constexpr const char* kTrialCutOffError = "controller stopped while the trial ran";
  struct Unfinished {
    std::vector<std::string> interrupted;
    std::vector<std::string> requeued;
  };
  Result<Unfinished> MarkUnfinishedInterrupted(bool keep_queued = false);

  // Inserts or replaces the trial (experiment_id, index) with its steps and antagonist samples
  // (the old children are deleted). One transaction. The experiment must exist.
  Status SaveTrial(const TrialRecord& t);
  // An attempt at trial (experiment_id, a.index) that did not count (AttemptRecord), kept beside
  // the trial's row; replaces a stored one with the same attempt number.
  Status SaveAttempt(const std::string& experiment_id, const AttemptRecord& a);
  // The attempts that did not count, by trial index then attempt; empty for a store older than
  // them. The id may be "latest".
  Result<std::vector<AttemptRecord>> GetAttempts(const std::string& experiment_id);
  // Trials in execution order. with_series=false skips steps and samples (cheaper). The id may be
  // "latest"; an unknown experiment is an error.
  Result<std::vector<TrialRecord>> GetTrials(const std::string& experiment_id,
                                             bool with_series = true);
  // The profiler trace SaveTrial kept with trial `index` (TrialRecord::trace_zlib; victim.trace),
  // nullopt when it has none. The id may be "latest".
  Result<std::optional<TrialTrace>> GetTrialTrace(const std::string& experiment_id, int index);
  // trial index -> metric name -> value, as SaveTrial stored them (table trial_metrics).
  Result<std::map<int, std::map<std::string, double>>> GetTrialMetrics(
      const std::string& experiment_id);

  // Inserts or replaces the calibration of (node, injector, options_key).
  Status PutCalibration(const CalibrationRecord& c);
  Result<std::optional<CalibrationRecord>> GetCalibration(const std::string& node,
                                                          const std::string& injector,
                                                          const std::string& options_key);
  Result<std::vector<CalibrationRecord>> ListCalibrations();

 private:
  Store(sqlite3* db, std::string path);
  static Result<std::unique_ptr<Store>> OpenImpl(const std::string& path, int schema_version);

  // Frees the reserve (KeepReserve); false when there was none. Caller holds mu_.
  bool ReleaseReserveLocked();
  Status UpdateExperimentLocked(const std::string& id, ExperimentState state,
                                const std::string& error, int64_t finished_unix_ms,
                                StatusCode error_code);

  std::string reserve_path_;  // "" while no reserve is kept; guarded by mu_
  // experiments.owner exists (schema 11+; older only in OpenAtSchemaVersionForTesting stores).
  bool has_owner_ = true;
  // experiments.submitter exists (schema 17+); likewise.
  bool has_submitter_ = true;
  sqlite3* db_;  // guarded by mu_ (one connection per Store; statements prepared per call)
  const std::string path_;
  std::mutex mu_;
};

}  // namespace codl::store
