// Store: trials with their phase medians, victim steps, antagonists and rate samples.
#include <sqlite3.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "lib/analysis/phase_order.h"
#include "lib/analysis/trial_metric.h"
#include "lib/store/phases_json.h"
#include "lib/store/sqlite_util.h"
#include "lib/store/store.h"
#include "lib/store/store_internal.h"

namespace codl::store {
namespace {

std::string TrialName(const std::string& experiment_id, int index) {
  return "trial " + std::to_string(index) + " of experiment '" + experiment_id + "'";
}

// The JSON texts SaveTrial encodes outside its lock: each step's phases (rank 0's steps, then
// each later rank's in rank order) and each rank's phase medians.
struct EncodedPhases {
  std::vector<std::string> steps;
  std::vector<std::string> rank_medians;
};

// victim_steps rows for `steps`, seq from *seq on; `rank` is bound (?8) unless it is kNoRank,
// for a schema without the column (older than version 10: `step` was prepared without it).
constexpr int kNoRank = -1;
Status InsertSteps(sql::Stmt& step, int64_t trial_id, const std::vector<VictimStep>& steps,
                   int rank, const EncodedPhases& encoded, size_t* seq, const std::string& what) {
  for (const VictimStep& s : steps) {
    step.BindInt(1, trial_id);
    step.BindInt(2, static_cast<int64_t>(*seq));
    step.BindInt(3, s.step);
    step.BindReal(4, s.step_time_s);
    step.BindReal(5, s.t_s);
    step.BindBool(6, s.warmup);
    step.BindText(7, encoded.steps[*seq]);
    if (rank != kNoRank) step.BindInt(8, rank);
    ++*seq;
    if (Status st = step.Run(what); !st) return st;
  }
  return Status::Ok();
}

// Every rank's row, and the steps of ranks after 0 (seq continuing after rank 0's).
Status InsertRanks(sql::Db db, int64_t trial_id, const TrialRecord& t, const EncodedPhases& encoded,
                   sql::Stmt& step, size_t* seq, const std::string& what) {
  auto rank = sql::Stmt::Prepare(
      db,
      "INSERT INTO trial_ranks (trial_id, rank, node, exit_code, wall_s, step_median_s, "
      "busy_median_s, phase_medians) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!rank) return rank.status();
  for (size_t i = 0; i < t.ranks.size(); ++i) {
    const RankRecord& r = t.ranks[i];
    rank->BindInt(1, trial_id);
    rank->BindInt(2, r.rank);
    rank->BindText(3, r.node);
    rank->BindInt(4, r.exit_code);
    rank->BindReal(5, r.wall_s);
    rank->BindReal(6, r.step_median_s);
    rank->BindReal(7, r.busy_median_s);
    rank->BindText(8, encoded.rank_medians[i]);
    if (Status s = rank->Run(what); !s) return s;
    if (r.rank == 0) continue;  // its steps are the trial's
    CODL_RETURN_IF_ERROR(InsertSteps(step, trial_id, r.steps, r.rank, encoded, seq, what));
  }
  return Status::Ok();
}

Status InsertChildren(sql::Db db, int64_t trial_id, const TrialRecord& t,
                      const EncodedPhases& encoded, const std::string& what) {
  if (Status s = InsertMetrics(db, trial_id, t, what); !s) return s;
  if (Status s = InsertFlagReasons(db, trial_id, t, what); !s) return s;
  auto median = sql::Stmt::Prepare(
      db,
      "INSERT INTO trial_phase_medians (trial_id, phase, median_s, seq) VALUES (?1, ?2, ?3, ?4)");
  if (!median) return median.status();
  const std::vector<std::string> phases = experiment::ReportedPhases(t);
  for (size_t i = 0; i < phases.size(); ++i) {
    median->BindInt(1, trial_id);
    median->BindText(2, phases[i]);
    median->BindReal(3, t.phase_medians.at(phases[i]));
    median->BindInt(4, static_cast<int64_t>(i));
    if (Status s = median->Run(what); !s) return s;
  }

  // Ranks need schema version 10 (trial_ranks, victim_steps.rank); an older store keeps rank 0.
  auto has_ranks = HasTable(db, "trial_ranks", what);
  if (!has_ranks) return has_ranks.status();
  auto step = sql::Stmt::Prepare(
      db, *has_ranks
              ? "INSERT INTO victim_steps (trial_id, seq, step, step_time_s, t_s, warmup, phases, "
                "rank) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
              : "INSERT INTO victim_steps (trial_id, seq, step, step_time_s, t_s, warmup, phases) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!step) return step.status();
  size_t seq = 0;
  CODL_RETURN_IF_ERROR(
      InsertSteps(*step, trial_id, t.steps, *has_ranks ? 0 : kNoRank, encoded, &seq, what));
  if (*has_ranks && !t.ranks.empty()) {
    CODL_RETURN_IF_ERROR(InsertRanks(db, trial_id, t, encoded, *step, &seq, what));
  }

  auto antagonist = sql::Stmt::Prepare(
      db,
      "INSERT INTO trial_antagonists (trial_id, seq, name, injector, node, level, target_rate, "
      "achieved_rate, achieved_cov, peak_rate, unit, reached_target, start_skew_s, cpu_s, run_s, "
      "effective_cpus) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  if (!antagonist) return antagonist.status();
  auto sample = sql::Stmt::Prepare(
      db,
      "INSERT INTO antagonist_samples (antagonist_id, seq, t_s, achieved, target) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!sample) return sample.status();
  for (size_t i = 0; i < t.antagonists.size(); ++i) {
    const AntagonistResult& a = t.antagonists[i];
    antagonist->BindInt(1, trial_id);
    antagonist->BindInt(2, static_cast<int64_t>(i));
    antagonist->BindText(3, a.name);
    antagonist->BindText(4, a.injector);
    antagonist->BindText(5, a.node);
    antagonist->BindReal(6, a.level);
    antagonist->BindReal(7, a.target_rate);
    antagonist->BindReal(8, a.achieved_rate);
    antagonist->BindReal(9, a.achieved_cov);
    antagonist->BindReal(10, a.peak_rate);
    antagonist->BindText(11, a.unit);
    antagonist->BindBool(12, a.reached_target);
    antagonist->BindReal(13, a.start_skew_s);
    antagonist->BindReal(14, a.cpu_s);
    antagonist->BindReal(15, a.run_s);
    antagonist->BindText(16, a.effective_cpus);
    if (Status s = antagonist->Run(what); !s) return s;
    const int64_t antagonist_id = sqlite3_last_insert_rowid(db.handle);
    for (size_t j = 0; j < a.samples.size(); ++j) {
      sample->BindInt(1, antagonist_id);
      sample->BindInt(2, static_cast<int64_t>(j));
      sample->BindReal(3, a.samples[j].t_s);
      sample->BindReal(4, a.samples[j].achieved);
      sample->BindReal(5, a.samples[j].target);
      if (Status s = sample->Run(what); !s) return s;
    }
  }
  return Status::Ok();
}

// Runs `stmt` (bound to the experiment id as ?1) and calls `on_row` for each row; stops at the
// first error, from SQLite or from on_row.
template <class F>
Status ForEachRow(Result<sql::Stmt>& stmt, const std::string& experiment_id,
                  const std::string& what, F&& on_row) {
  if (!stmt) return stmt.status();
  stmt->BindText(1, experiment_id);
  while (true) {
    auto row = stmt->Next(what);
    if (!row) return row.status();
    if (!*row) return Status::Ok();
    if (Status s = on_row(*stmt); !s) {
      stmt->Reset();
      return s;
    }
  }
}

TrialRecord TrialFromRow(const sql::Stmt& r) {
  TrialRecord t;
  t.index = static_cast<int>(r.Int(1));
  t.repetition = static_cast<int>(r.Int(2));
  t.baseline = r.Bool(3);
  t.pairing = r.Text(4);
  t.error = r.Text(6);
  t.exit_code = static_cast<int>(r.Int(7));
  t.stderr_tail = r.Text(8);
  t.victim_node = r.Text(9);
  t.value_s = r.Real(10);
  t.wall_s = r.Real(11);
  t.started_unix_ms = r.Int(12);
  t.finished_unix_ms = r.Int(13);
  t.victim_cpu_s = r.Real(14);
  t.victim_effective_cpus = r.Text(15);
  return t;
}

AntagonistResult AntagonistFromRow(const sql::Stmt& r) {
  AntagonistResult a;
  a.name = r.Text(2);
  a.injector = r.Text(3);
  a.node = r.Text(4);
  a.level = r.Real(5);
  a.target_rate = r.Real(6);
  a.achieved_rate = r.Real(7);
  a.achieved_cov = r.Real(8);
  a.peak_rate = r.Real(9);
  a.unit = r.Text(10);
  a.reached_target = r.Bool(11);
  a.start_skew_s = r.Real(12);
  a.cpu_s = r.Real(13);
  a.run_s = r.Real(14);
  a.effective_cpus = r.Text(15);
  return a;
}

// Reads one experiment's trials within the caller's read transaction: the trial rows first,
// then their children, one query per table in the trials' order. The joins make orphans
// impossible within one snapshot; checked anyway rather than trusted.
class TrialLoader {
 public:
  TrialLoader(sql::Db db, std::string experiment_id, std::string what)
      : db_(db), id_(std::move(experiment_id)), what_(std::move(what)) {}

  std::vector<TrialRecord>& trials() { return trials_; }

  Status LoadTrials() {
    auto rows = sql::Stmt::Prepare(
        db_,
        "SELECT id, idx, repetition, baseline, pairing, state, error, exit_code, stderr_tail, "
        "victim_node, metric, wall_s, started_unix_ms, finished_unix_ms, victim_cpu_s, "
        "victim_effective_cpus "
        "FROM trials WHERE experiment_id = ?1 ORDER BY idx");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      TrialRecord t = TrialFromRow(r);
      t.experiment_id = id_;
      const std::string state = r.Text(5);
      if (!ParseTrialState(state, &t.state)) {
        return Err(TrialName(id_, t.index) + " in " + *db_.path + " has unknown state '" + state +
                   "'");
      }
      trial_pos_[r.Int(0)] = trials_.size();
      trials_.push_back(std::move(t));
      return Status::Ok();
    });
  }

  Status LoadPhaseMedians() {
    auto rows =
        sql::Stmt::Prepare(db_,
                           "SELECT m.trial_id, m.phase, m.median_s FROM trial_phase_medians m "
                           "JOIN trials t ON t.id = m.trial_id WHERE t.experiment_id = ?1 "
                           "ORDER BY m.trial_id, m.seq, m.phase");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      auto it = trial_pos_.find(r.Int(0));
      if (it == trial_pos_.end()) return Orphan("phase median");
      TrialRecord& t = trials_[it->second];
      // In reported order (rows stored before migration 7 have no seq: name order).
      if (t.phase_medians.emplace(r.Text(1), r.Real(2)).second) t.phase_order.push_back(r.Text(1));
      return Status::Ok();
    });
  }

  Status LoadAntagonists() {
    auto rows = sql::Stmt::Prepare(
        db_,
        "SELECT a.id, a.trial_id, a.name, a.injector, a.node, a.level, a.target_rate, "
        "a.achieved_rate, a.achieved_cov, a.peak_rate, a.unit, a.reached_target, a.start_skew_s, "
        "a.cpu_s, a.run_s, a.effective_cpus "
        "FROM trial_antagonists a JOIN trials t ON t.id = a.trial_id "
        "WHERE t.experiment_id = ?1 ORDER BY t.idx, a.seq");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      AntagonistResult a = AntagonistFromRow(r);
      auto it = trial_pos_.find(r.Int(1));
      if (it == trial_pos_.end()) return Orphan("antagonist");
      const size_t tp = it->second;
      antagonist_pos_[r.Int(0)] = {tp, trials_[tp].antagonists.size()};
      trials_[tp].antagonists.push_back(std::move(a));
      return Status::Ok();
    });
  }

  // Reasons of flagged trials; a store older than the table, or a row older than it, has none
  // (RestoreFlagReasons then makes one of the error text).
  Status LoadFlagReasons() {
    auto has = HasTable(db_, "trial_flag_reasons", what_);
    if (!has) return has.status();
    if (*has) {
      auto rows =
          sql::Stmt::Prepare(db_,
                             "SELECT f.trial_id, f.code, f.detail FROM trial_flag_reasons f "
                             "JOIN trials t ON t.id = f.trial_id WHERE t.experiment_id = ?1 "
                             "ORDER BY t.idx, f.seq");
      Status s = ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
        auto it = trial_pos_.find(r.Int(0));
        if (it == trial_pos_.end()) return Orphan("flag reason");
        trials_[it->second].flag_reasons.push_back({ParseFlagCode(r.Text(1)), r.Text(2)});
        return Status::Ok();
      });
      if (!s) return s;
    }
    for (TrialRecord& t : trials_) RestoreFlagReasons(&t);
    return Status::Ok();
  }

  // victim.cache's figures; a store older than the table has none.
  Status LoadSolo() {
    auto has = HasTable(db_, "trial_solo", what_);
    if (!has) return has.status();
    if (!*has) return Status::Ok();
    auto rows = sql::Stmt::Prepare(db_,
                                   "SELECT s.trial_id FROM trial_solo s JOIN trials t ON "
                                   "t.id = s.trial_id WHERE t.experiment_id = ?1");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      auto it = trial_pos_.find(r.Int(0));
      if (it == trial_pos_.end()) return Orphan("solo row");
      trials_[it->second].solo = true;
      return Status::Ok();
    });
  }

  Status LoadCache() {
    auto has = HasTable(db_, "trial_cache", what_);
    if (!has) return has.status();
    if (!*has) return Status::Ok();
    auto rows = sql::Stmt::Prepare(db_,
                                   "SELECT c.trial_id, c.total_bytes, c.resident_bytes FROM "
                                   "trial_cache c JOIN trials t ON t.id = c.trial_id "
                                   "WHERE t.experiment_id = ?1");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      auto it = trial_pos_.find(r.Int(0));
      if (it == trial_pos_.end()) return Orphan("cache row");
      trials_[it->second].cache_total_bytes = r.Int(1);
      trials_[it->second].cache_resident_bytes = r.Int(2);
      return Status::Ok();
    });
  }

  // Every rank's summary row; a store older than the table has none.
  Status LoadRanks() {
    auto has = HasTable(db_, "trial_ranks", what_);
    if (!has) return has.status();
    if (!*has) return Status::Ok();
    auto rows = sql::Stmt::Prepare(
        db_,
        "SELECT r.trial_id, r.rank, r.node, r.exit_code, r.wall_s, r.step_median_s, "
        "r.busy_median_s, r.phase_medians FROM trial_ranks r JOIN trials t ON t.id = r.trial_id "
        "WHERE t.experiment_id = ?1 ORDER BY t.idx, r.rank");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      auto it = trial_pos_.find(r.Int(0));
      if (it == trial_pos_.end()) return Orphan("victim rank");
      TrialRecord& t = trials_[it->second];
      RankRecord rank;
      rank.rank = static_cast<int>(r.Int(1));
      rank.node = r.Text(2);
      rank.exit_code = static_cast<int>(r.Int(3));
      rank.wall_s = r.Real(4);
      rank.step_median_s = r.Real(5);
      rank.busy_median_s = r.Real(6);
      auto medians = DecodePhases(r.Text(7));
      if (!medians) {
        return medians.status().WithContext(TrialName(id_, t.index) + " in " + *db_.path +
                                            ", rank " + std::to_string(rank.rank));
      }
      rank.phase_medians = std::move(medians).value();
      t.ranks.push_back(std::move(rank));
      return Status::Ok();
    });
  }

  // Rank 0's steps into the trial, a later rank's into its RankRecord (loaded first).
  Status LoadSteps() {
    auto has_ranks = HasTable(db_, "trial_ranks", what_);
    if (!has_ranks) return has_ranks.status();
    const std::string query =
        std::string("SELECT s.trial_id, s.step, s.step_time_s, s.t_s, s.warmup, s.phases, ") +
        (*has_ranks ? "s.rank" : "0") +  // victim_steps.rank came with trial_ranks
        " FROM victim_steps s JOIN trials t ON t.id = s.trial_id "
        "WHERE t.experiment_id = ?1 ORDER BY t.idx, s.seq";
    auto rows = sql::Stmt::Prepare(db_, query.c_str());
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      VictimStep v;
      v.step = r.Int(1);
      v.step_time_s = r.Real(2);
      v.t_s = r.Real(3);
      v.warmup = r.Bool(4);
      auto it = trial_pos_.find(r.Int(0));
      if (it == trial_pos_.end()) return Orphan("victim step");
      TrialRecord& t = trials_[it->second];
      auto phases = DecodePhases(r.Text(5));
      if (!phases) {
        return phases.status().WithContext(TrialName(id_, t.index) + " in " + *db_.path +
                                           ", step " + std::to_string(v.step));
      }
      v.phases = std::move(phases).value();
      const int rank = static_cast<int>(r.Int(6));
      if (rank == 0) {
        t.steps.push_back(std::move(v));
        return Status::Ok();
      }
      auto owner = std::find_if(t.ranks.begin(), t.ranks.end(),
                                [rank](const RankRecord& x) { return x.rank == rank; });
      if (owner == t.ranks.end()) return Orphan("victim step of a rank");
      owner->steps.push_back(std::move(v));
      return Status::Ok();
    });
  }

  Status LoadSamples() {
    auto rows = sql::Stmt::Prepare(
        db_,
        "SELECT x.antagonist_id, x.t_s, x.achieved, x.target FROM antagonist_samples x "
        "JOIN trial_antagonists a ON a.id = x.antagonist_id JOIN trials t ON t.id = a.trial_id "
        "WHERE t.experiment_id = ?1 ORDER BY t.idx, a.seq, x.seq");
    return ForEachRow(rows, id_, what_, [&](const sql::Stmt& r) -> Status {
      auto it = antagonist_pos_.find(r.Int(0));
      if (it == antagonist_pos_.end()) return Orphan("antagonist sample");
      const auto [tp, ap] = it->second;
      trials_[tp].antagonists[ap].samples.push_back(RateSample{r.Real(1), r.Real(2), r.Real(3)});
      return Status::Ok();
    });
  }

  Status LoadTelemetry() {
    if (Status s = LoadAttemptColumns(db_, id_, trial_pos_, &trials_, what_); !s) return s;
    if (Status s = LoadNodeTelemetry(db_, id_, trial_pos_, &trials_, what_); !s) return s;
    return LoadGpuTelemetry(db_, id_, trial_pos_, &trials_, what_);
  }

 private:
  Status Orphan(const char* kind) const {
    return Err(std::string("a ") + kind + " of experiment '" + id_ + "' in " + *db_.path +
               " belongs to no trial");
  }

  sql::Db db_;
  const std::string id_;
  const std::string what_;
  std::vector<TrialRecord> trials_;
  std::unordered_map<int64_t, size_t> trial_pos_;  // trials.id -> position in trials_
  // trial_antagonists.id -> (trial position, antagonist position)
  std::unordered_map<int64_t, std::pair<size_t, size_t>> antagonist_pos_;
};

}  // namespace

Status Store::SaveTrial(const TrialRecord& t) {
  const std::string what = "saving " + TrialName(t.experiment_id, t.index);
  // Encode outside the lock; a phase map that cannot be encoded writes nothing.
  EncodedPhases encoded;
  auto encode_steps = [&](const std::vector<VictimStep>& steps, const std::string& rank) {
    for (const VictimStep& s : steps) {
      auto json = EncodePhases(s.phases);
      if (!json) {
        return json.status().WithContext(what + " in " + path_ + ": " + rank + "step " +
                                         std::to_string(s.step));
      }
      encoded.steps.push_back(std::move(json).value());
    }
    return Status::Ok();
  };
  CODL_RETURN_IF_ERROR(encode_steps(t.steps, ""));
  for (const RankRecord& r : t.ranks) {
    const std::string rank = "rank " + std::to_string(r.rank);
    if (r.rank != 0) CODL_RETURN_IF_ERROR(encode_steps(r.steps, rank + ", "));
    auto json = EncodePhases(r.phase_medians);
    if (!json) return json.status().WithContext(what + " in " + path_ + ": " + rank);
    encoded.rank_medians.push_back(std::move(json).value());
  }

  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kWrite, what); !s) return s;
  if (t.experiment_id == kLatestId) return NoSuchExperiment(db, t.experiment_id);
  if (auto id = ResolveExperimentId(db, t.experiment_id); !id) return id.status();

  // Replace: the old row's steps, antagonists and samples go with it (ON DELETE CASCADE).
  auto remove = sql::Stmt::Prepare(db, "DELETE FROM trials WHERE experiment_id = ?1 AND idx = ?2");
  if (!remove) return remove.status();
  remove->BindText(1, t.experiment_id);
  remove->BindInt(2, t.index);
  if (Status s = remove->Run(what); !s) return s;

  auto insert = sql::Stmt::Prepare(
      db,
      "INSERT INTO trials (experiment_id, idx, repetition, baseline, pairing, state, error, "
      "exit_code, stderr_tail, victim_node, metric, wall_s, started_unix_ms, finished_unix_ms, "
      "victim_cpu_s, victim_effective_cpus) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  if (!insert) return insert.status();
  insert->BindText(1, t.experiment_id);
  insert->BindInt(2, t.index);
  insert->BindInt(3, t.repetition);
  insert->BindBool(4, t.baseline);
  insert->BindText(5, t.pairing);
  insert->BindText(6, ToString(t.state));
  insert->BindText(7, t.error);
  insert->BindInt(8, t.exit_code);
  insert->BindText(9, t.stderr_tail);
  insert->BindText(10, t.victim_node);
  insert->BindReal(11, t.value_s);
  insert->BindReal(12, t.wall_s);
  insert->BindInt(13, t.started_unix_ms);
  insert->BindInt(14, t.finished_unix_ms);
  insert->BindReal(15, t.victim_cpu_s);
  insert->BindText(16, t.victim_effective_cpus);
  if (Status s = insert->Run(what); !s) return s;
  const int64_t trial_id = sqlite3_last_insert_rowid(db_);

  if (Status s = InsertChildren(db, trial_id, t, encoded, what); !s) return s;
  if (Status s = SaveAttemptColumns(db, trial_id, t, what); !s) return s;
  if (Status s = InsertCache(db, trial_id, t, what); !s) return s;
  if (Status s = InsertSolo(db, trial_id, t, what); !s) return s;
  if (Status s = InsertNodeTelemetry(db, trial_id, t, what); !s) return s;
  if (Status s = InsertGpuTelemetry(db, trial_id, t, what); !s) return s;
  auto has_traces = HasTable(db, "trial_traces", what);
  if (!has_traces) return has_traces.status();
  if (*has_traces && !t.trace_zlib.empty()) {
    auto trace = sql::Stmt::Prepare(
        db, "INSERT INTO trial_traces (trial_id, raw_bytes, data) VALUES (?1, ?2, ?3)");
    if (!trace) return trace.status();
    trace->BindInt(1, trial_id);
    trace->BindInt(2, t.trace_raw_bytes);
    trace->BindBlob(3, t.trace_zlib);
    if (Status s = trace->Run(what + ": its profiler trace"); !s) return s;
  }
  return txn.Commit(what);
}

Result<std::optional<TrialTrace>> Store::GetTrialTrace(const std::string& experiment_id,
                                                       int index) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "reading the profiler trace of " + TrialName(experiment_id, index);
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kRead, what); !s) return s;
  auto resolved = ResolveExperimentId(db, experiment_id);
  if (!resolved) return resolved.status();
  auto has_traces = HasTable(db, "trial_traces", what);
  if (!has_traces) return has_traces.status();
  if (!*has_traces) return std::optional<TrialTrace>();  // a store from before traces
  auto stmt = sql::Stmt::Prepare(db,
                                 "SELECT x.raw_bytes, x.data FROM trial_traces x JOIN trials t "
                                 "ON t.id = x.trial_id WHERE t.experiment_id = ?1 AND t.idx = ?2");
  if (!stmt) return stmt.status();
  stmt->BindText(1, *resolved);
  stmt->BindInt(2, index);
  auto row = stmt->Next(what);
  if (!row) return row.status();
  std::optional<TrialTrace> out;
  if (*row) out = TrialTrace{stmt->Int(0), stmt->Blob(1)};
  if (Status c = txn.Commit(what); !c) return c;
  return out;
}

Result<std::vector<TrialRecord>> Store::GetTrials(const std::string& experiment_id,
                                                  bool with_series) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "reading the trials of experiment '" + experiment_id + "'";
  sql::Txn txn(db);  // one snapshot: a trial replaced meanwhile is seen whole, old or new
  if (Status s = txn.Begin(sql::Txn::Kind::kRead, what); !s) return s;
  auto resolved = ResolveExperimentId(db, experiment_id);
  if (!resolved) return resolved.status();

  TrialLoader loader(db, *resolved, what);
  if (Status s = loader.LoadTrials(); !s) return s;
  if (loader.trials().empty()) return std::move(loader.trials());
  Status s = loader.LoadPhaseMedians();
  if (s) s = loader.LoadAntagonists();
  if (s) s = loader.LoadFlagReasons();
  if (s) s = loader.LoadRanks();
  if (s) s = loader.LoadCache();
  if (s) s = loader.LoadSolo();
  if (s) s = loader.LoadTelemetry();
  if (s && with_series) s = loader.LoadSteps();
  if (s && with_series) s = loader.LoadSamples();
  if (!s) return s;
  if (Status c = txn.Commit(what); !c) return c;
  return std::move(loader.trials());
}

Result<std::map<int, std::map<std::string, double>>> Store::GetTrialMetrics(
    const std::string& experiment_id) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "reading the trial metrics of experiment '" + experiment_id + "'";
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kRead, what); !s) return s;
  auto resolved = ResolveExperimentId(db, experiment_id);
  if (!resolved) return resolved.status();
  auto stmt = sql::Stmt::Prepare(db,
                                 "SELECT t.idx, m.metric, m.value FROM trial_metrics m "
                                 "JOIN trials t ON t.id = m.trial_id WHERE t.experiment_id = ?1");
  if (!stmt) return stmt.status();
  stmt->BindText(1, *resolved);
  std::map<int, std::map<std::string, double>> out;
  while (true) {
    auto row = stmt->Next(what);
    if (!row) return row.status();
    if (!*row) break;
    out[static_cast<int>(stmt->Int(0))][stmt->Text(1)] = stmt->Real(2);
  }
  if (Status c = txn.Commit(what); !c) return c;
  return out;
}

}  // namespace codl::store
