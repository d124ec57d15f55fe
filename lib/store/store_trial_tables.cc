// Store: a trial's optional child tables (each absent in a store opened at an older version for
// testing): stored metrics, victim.cache's figures, flag reasons, and the solo mark of a
// workload's solo run. Split from store_trials.cc, which saves and loads the trial itself.
#include "lib/analysis/trial_metric.h"
#include "lib/store/sqlite_util.h"
#include "lib/store/store_internal.h"

namespace codl::store {

// Whether the schema has `table` (a store opened at an older version for testing lacks the newer
// tables; asking by name keeps this right whatever number the migration ends up with).
Result<bool> HasTable(sql::Db db, const char* table, const std::string& what) {
  auto stmt = sql::Stmt::Prepare(db, "SELECT count(*) FROM sqlite_master WHERE name = ?1");
  if (!stmt) return stmt.status();
  stmt->BindText(1, table);
  auto row = stmt->Next(what);
  if (!row) return row.status();
  return *row && stmt->Int(0) > 0;
}

// The per-trial value of every stored metric, computed from the trial's steps.
Status InsertMetrics(sql::Db db, int64_t trial_id, const TrialRecord& t, const std::string& what) {
  auto has = HasTable(db, "trial_metrics", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto insert = sql::Stmt::Prepare(
      db, "INSERT INTO trial_metrics (trial_id, metric, value) VALUES (?1, ?2, ?3)");
  if (!insert) return insert.status();
  for (const auto& [name, value] : experiment::AllTrialMetricValues(t)) {
    insert->BindInt(1, trial_id);
    insert->BindText(2, name);
    insert->BindReal(3, value);
    if (Status s = insert->Run(what); !s) return s;
  }
  return Status::Ok();
}

// victim.cache's figures; none when not measured, or in a store older than the table.
Status InsertCache(sql::Db db, int64_t trial_id, const TrialRecord& t, const std::string& what) {
  if (t.cache_total_bytes < 0) return Status::Ok();
  auto has = HasTable(db, "trial_cache", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto insert = sql::Stmt::Prepare(
      db, "INSERT INTO trial_cache (trial_id, total_bytes, resident_bytes) VALUES (?1, ?2, ?3)");
  if (!insert) return insert.status();
  insert->BindInt(1, trial_id);
  insert->BindInt(2, t.cache_total_bytes);
  insert->BindInt(3, t.cache_resident_bytes);
  return insert->Run(what);
}

Status InsertFlagReasons(sql::Db db, int64_t trial_id, const TrialRecord& t,
                         const std::string& what) {
  if (t.flag_reasons.empty()) return Status::Ok();
  auto has = HasTable(db, "trial_flag_reasons", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto insert = sql::Stmt::Prepare(
      db, "INSERT INTO trial_flag_reasons (trial_id, seq, code, detail) VALUES (?1, ?2, ?3, ?4)");
  if (!insert) return insert.status();
  for (size_t i = 0; i < t.flag_reasons.size(); ++i) {
    insert->BindInt(1, trial_id);
    insert->BindInt(2, static_cast<int64_t>(i));
    insert->BindText(3, ToString(t.flag_reasons[i].code));
    insert->BindText(4, t.flag_reasons[i].detail);
    if (Status s = insert->Run(what); !s) return s;
  }
  return Status::Ok();
}

// A workload antagonist's solo run (TrialRecord::solo): one row, its presence the mark.
Status InsertSolo(sql::Db db, int64_t trial_id, const TrialRecord& t, const std::string& what) {
  if (!t.solo) return Status::Ok();
  auto has = HasTable(db, "trial_solo", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto insert = sql::Stmt::Prepare(db, "INSERT INTO trial_solo (trial_id) VALUES (?1)");
  if (!insert) return insert.status();
  insert->BindInt(1, trial_id);
  return insert->Run(what);
}

}  // namespace codl::store
