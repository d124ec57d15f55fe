// Store: experiments, trials, victim steps, antagonist samples and calibrations in SQLite
// (WAL, versioned migrations). Every SaveTrial is one transaction, committed before it returns,
// so a crash never loses a completed trial. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/records.h"
#include "common/result.h"

struct sqlite3;

namespace codl::store {

class Store {
 public:
  // Opens (creating if needed) and migrates the database at `path` to the latest schema.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int SchemaVersion();  // latest applied migration
  static int LatestSchemaVersion();

  Status CreateExperiment(const ExperimentRecord& e);
  Status UpdateExperiment(const std::string& id, ExperimentState state, const std::string& error,
                          int64_t finished_unix_ms);
  Result<ExperimentRecord> GetExperiment(const std::string& id);  // id or "latest"
  Result<std::vector<ExperimentRecord>> ListExperiments();         // newest first
  // Experiments left queued/running by a controller that died: marked interrupted. Returns ids.
  Result<std::vector<std::string>> MarkUnfinishedInterrupted();

  // Inserts or replaces the trial (experiment_id, index) with its steps and antagonist samples.
  Status SaveTrial(const TrialRecord& t);
  // Trials in execution order. with_series=false skips steps and samples (cheaper).
  Result<std::vector<TrialRecord>> GetTrials(const std::string& experiment_id,
                                             bool with_series = true);

  Status PutCalibration(const CalibrationRecord& c);
  Result<std::optional<CalibrationRecord>> GetCalibration(const std::string& node,
                                                          const std::string& injector,
                                                          const std::string& options_key);
  Result<std::vector<CalibrationRecord>> ListCalibrations();

 private:
  explicit Store(sqlite3* db);
  sqlite3* db_;
  std::mutex mu_;
};

}  // namespace codl::store
