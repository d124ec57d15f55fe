// Helpers shared by store.cc (experiments, calibrations), store_trials.cc and
// store_trial_tables.cc. Internal.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "lib/common/records.h"
#include "lib/common/result.h"
#include "lib/store/sqlite_util.h"

namespace codl::store {

inline constexpr const char* kLatestId = "latest";

// "no experiment 'X' in FILE".
Error NoSuchExperiment(sql::Db db, const std::string& id);

// Maps "latest" to the newest experiment's id (created time, ties broken by insertion order);
// checks that any other id exists. Call inside a transaction for a consistent answer.
Result<std::string> ResolveExperimentId(sql::Db db, const std::string& id);

// store_trial_tables.cc: whether the schema has `table` (a store opened at an older version for
// testing lacks the newer ones), and the inserts of a trial's optional child tables, each a
// no-op when its table is absent.
Result<bool> HasTable(sql::Db db, const char* table, const std::string& what);
Status InsertMetrics(sql::Db db, int64_t trial_id, const TrialRecord& t, const std::string& what);
Status InsertCache(sql::Db db, int64_t trial_id, const TrialRecord& t, const std::string& what);
Status InsertFlagReasons(sql::Db db, int64_t trial_id, const TrialRecord& t,
                         const std::string& what);
Status InsertSolo(sql::Db db, int64_t trial_id, const TrialRecord& t, const std::string& what);

// store_telemetry.cc: a trial's node telemetry (TrialRecord::node_telemetry), saved and loaded;
// no-ops in a store older than the table. trial_pos: trials.id -> position in `trials`.
Status InsertNodeTelemetry(sql::Db db, int64_t trial_id, const TrialRecord& t,
                           const std::string& what);
Status LoadNodeTelemetry(sql::Db db, const std::string& experiment_id,
                         const std::unordered_map<int64_t, size_t>& trial_pos,
                         std::vector<TrialRecord>* trials, const std::string& what);

// store_gpu_telemetry.cc: the GPUs of a trial's node telemetry (NodeTelemetry::gpus and
// gpu_note), saved after InsertNodeTelemetry and loaded after LoadNodeTelemetry; no-ops in a
// store older than trial_gpu_telemetry.
Status InsertGpuTelemetry(sql::Db db, int64_t trial_id, const TrialRecord& t,
                          const std::string& what);
Status LoadGpuTelemetry(sql::Db db, const std::string& experiment_id,
                        const std::unordered_map<int64_t, size_t>& trial_pos,
                        std::vector<TrialRecord>* trials, const std::string& what);

// store_attempts.cc: a trial row's attempt and failure kind (TrialRecord::attempt, failure),
// written after its insert and read after the rows (with earlier_failures); no-ops in a store older
// than trial_attempts.
Status SaveAttemptColumns(sql::Db db, int64_t trial_id, const TrialRecord& t,
                          const std::string& what);
Status LoadAttemptColumns(sql::Db db, const std::string& experiment_id,
                          const std::unordered_map<int64_t, size_t>& trial_pos,
                          std::vector<TrialRecord>* trials, const std::string& what);

}  // namespace codl::store
