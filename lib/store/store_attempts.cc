// Store: trial attempts (schema version 18). A trial's row holds its counted, last attempt
// (trials.attempt, trials.failure_kind); the attempts that did not count — failed for a reason
// the retry policy retries, cut off by a controller restart or a cancel, re-run by
// `codlctl resume --retry-failed` — are rows of trial_attempts. A store older than the table has
// neither: every trial is its first attempt.
#include "lib/store/sqlite_util.h"
#include "lib/store/store.h"
#include "lib/store/store_internal.h"

namespace codl::store {
namespace {
constexpr const char* kAttemptsTable = "trial_attempts";

FailureKind KindOf(const std::string& name) {
  FailureKind k = FailureKind::kNone;
  return ParseFailureKind(name, &k) ? k : FailureKind::kNone;  // unknown: read as none
}
// Each trial's earlier attempts' failure kinds (TrialRecord::earlier_failures).
Status LoadEarlierFailures(sql::Db db, const std::string& experiment_id,
                           std::vector<TrialRecord>* trials, const std::string& what) {
  auto has = HasTable(db, kAttemptsTable, what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  std::unordered_map<int, size_t> by_index;
  for (size_t i = 0; i < trials->size(); ++i) by_index[(*trials)[i].index] = i;
  auto rows = sql::Stmt::Prepare(db,
                                 "SELECT idx, attempt, failure_kind FROM trial_attempts "
                                 "WHERE experiment_id = ?1 ORDER BY idx, attempt");
  if (!rows) return rows.status();
  rows->BindText(1, experiment_id);
  while (true) {
    auto row = rows->Next(what);
    if (!row) return row.status();
    if (!*row) return Status::Ok();
    auto it = by_index.find(static_cast<int>(rows->Int(0)));
    if (it == by_index.end()) continue;
    TrialRecord& t = (*trials)[it->second];
    // Only the attempts before the counted one (a stale row at or past it is not earlier).
    if (rows->Int(1) < t.attempt) t.earlier_failures.push_back(KindOf(rows->Text(2)));
  }
}

}  // namespace

Status SaveAttemptColumns(sql::Db db, int64_t trial_id, const TrialRecord& t,
                          const std::string& what) {
  auto has = HasTable(db, kAttemptsTable, what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto update =
      sql::Stmt::Prepare(db, "UPDATE trials SET attempt = ?2, failure_kind = ?3 WHERE id = ?1");
  if (!update) return update.status();
  update->BindInt(1, trial_id);
  update->BindInt(2, t.attempt);
  update->BindText(3, ToString(t.failure));
  return update->Run(what);
}

Status LoadAttemptColumns(sql::Db db, const std::string& experiment_id,
                          const std::unordered_map<int64_t, size_t>& trial_pos,
                          std::vector<TrialRecord>* trials, const std::string& what) {
  auto has = HasTable(db, kAttemptsTable, what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto rows = sql::Stmt::Prepare(
      db, "SELECT id, attempt, failure_kind FROM trials WHERE experiment_id = ?1");
  if (!rows) return rows.status();
  rows->BindText(1, experiment_id);
  while (true) {
    auto row = rows->Next(what);
    if (!row) return row.status();
    if (!*row) return LoadEarlierFailures(db, experiment_id, trials, what);
    auto it = trial_pos.find(rows->Int(0));
    if (it == trial_pos.end()) continue;  // not one of the rows read (cannot be, in one snapshot)
    TrialRecord& t = (*trials)[it->second];
    t.attempt = static_cast<int>(rows->Int(1));
    t.failure = KindOf(rows->Text(2));
  }
}

Status Store::SaveAttempt(const std::string& experiment_id, const AttemptRecord& a) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "saving attempt " + std::to_string(a.attempt) + " of trial " +
                           std::to_string(a.index + 1) + " of experiment " + experiment_id;
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kWrite, what); !s) return s;
  if (experiment_id == kLatestId) return NoSuchExperiment(db, experiment_id);
  if (auto id = ResolveExperimentId(db, experiment_id); !id) return id.status();
  auto has = HasTable(db, kAttemptsTable, what);
  if (!has) return has.status();
  if (!*has) return txn.Commit(what);
  // Replaces: a trial cut off twice at the same attempt (two crashes before it ran again) is
  // one row.
  auto insert = sql::Stmt::Prepare(
      db,
      "INSERT OR REPLACE INTO trial_attempts (experiment_id, idx, attempt, state, failure_kind, "
      "error, victim_node, started_unix_ms, finished_unix_ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  if (!insert) return insert.status();
  insert->BindText(1, experiment_id);
  insert->BindInt(2, a.index);
  insert->BindInt(3, a.attempt);
  insert->BindText(4, ToString(a.state));
  insert->BindText(5, ToString(a.failure));
  insert->BindText(6, a.error);
  insert->BindText(7, a.victim_node);
  insert->BindInt(8, a.started_unix_ms);
  insert->BindInt(9, a.finished_unix_ms);
  if (Status s = insert->Run(what); !s) return s;
  return txn.Commit(what);
}

Result<std::vector<AttemptRecord>> Store::GetAttempts(const std::string& experiment_id) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "reading the attempts of experiment " + experiment_id;
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kRead, what); !s) return s;
  auto id = ResolveExperimentId(db, experiment_id);
  if (!id) return id.status();
  std::vector<AttemptRecord> out;
  auto has = HasTable(db, kAttemptsTable, what);
  if (!has) return has.status();
  if (!*has) return out;
  auto rows = sql::Stmt::Prepare(
      db,
      "SELECT idx, attempt, state, failure_kind, error, victim_node, started_unix_ms, "
      "finished_unix_ms FROM trial_attempts WHERE experiment_id = ?1 ORDER BY idx, attempt");
  if (!rows) return rows.status();
  rows->BindText(1, *id);
  while (true) {
    auto row = rows->Next(what);
    if (!row) return row.status();
    if (!*row) break;
    AttemptRecord a;
    a.index = static_cast<int>(rows->Int(0));
    a.attempt = static_cast<int>(rows->Int(1));
    if (!ParseTrialState(rows->Text(2), &a.state)) a.state = TrialState::kFailed;
    a.failure = KindOf(rows->Text(3));
    a.error = rows->Text(4);
    a.victim_node = rows->Text(5);
    a.started_unix_ms = rows->Int(6);
    a.finished_unix_ms = rows->Int(7);
    out.push_back(std::move(a));
  }
  if (Status s = txn.Commit(what); !s) return s;
  return out;
}

}  // namespace codl::store
