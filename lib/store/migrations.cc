#include "lib/store/migrations.h"

#include <string>

namespace codl::store {
namespace {

struct Migration {
  const char* what;
  const char* sql;
};

// Conventions: enums as their ToString text; booleans 0/1; times as Unix milliseconds; REAL
// columns are nullable because SQLite stores a bound NaN as NULL (read back as NaN); children
// are deleted with their parent (ON DELETE CASCADE, foreign_keys is on for every connection);
// `seq` keeps the order in which a list was reported.
constexpr Migration kMigrations[] = {
    // 1: the results model of common/records.h.
    {"create the results schema", R"sql(
PRAGMA application_id = 1131365452;  -- kApplicationId, 0x436F444C

CREATE TABLE experiments (
  id               TEXT PRIMARY KEY NOT NULL,
  name             TEXT NOT NULL DEFAULT '',
  source_path      TEXT NOT NULL DEFAULT '',
  yaml             TEXT NOT NULL DEFAULT '',
  state            TEXT NOT NULL,
  error            TEXT NOT NULL DEFAULT '',
  seed             INTEGER NOT NULL DEFAULT 0,  -- uint64 stored bit-for-bit as int64
  total_trials     INTEGER NOT NULL DEFAULT 0,
  created_unix_ms  INTEGER NOT NULL DEFAULT 0,
  finished_unix_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX experiments_by_created ON experiments (created_unix_ms);

CREATE TABLE trials (
  id               INTEGER PRIMARY KEY,
  experiment_id    TEXT NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  idx              INTEGER NOT NULL,  -- position in the executed order
  repetition       INTEGER NOT NULL DEFAULT 0,
  baseline         INTEGER NOT NULL DEFAULT 0,
  pairing          TEXT NOT NULL DEFAULT '',
  state            TEXT NOT NULL,
  error            TEXT NOT NULL DEFAULT '',
  exit_code        INTEGER NOT NULL DEFAULT 0,
  stderr_tail      TEXT NOT NULL DEFAULT '',
  victim_node      TEXT NOT NULL DEFAULT '',
  metric           REAL,
  wall_s           REAL,
  started_unix_ms  INTEGER NOT NULL DEFAULT 0,
  finished_unix_ms INTEGER NOT NULL DEFAULT 0,
  UNIQUE (experiment_id, idx)
);

CREATE TABLE trial_phase_medians (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  phase    TEXT NOT NULL,
  median_s REAL,
  PRIMARY KEY (trial_id, phase)
) WITHOUT ROWID;

CREATE TABLE victim_steps (
  trial_id    INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  step        INTEGER NOT NULL,
  step_time_s REAL,
  t_s         REAL,
  warmup      INTEGER NOT NULL DEFAULT 0,
  phases      TEXT NOT NULL DEFAULT '{}',  -- JSON object: phase name -> seconds
  PRIMARY KEY (trial_id, seq)
) WITHOUT ROWID;

CREATE TABLE trial_antagonists (
  id             INTEGER PRIMARY KEY,
  trial_id       INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  seq            INTEGER NOT NULL,
  name           TEXT NOT NULL DEFAULT '',
  injector       TEXT NOT NULL DEFAULT '',
  node           TEXT NOT NULL DEFAULT '',
  level          REAL,
  target_rate    REAL,
  achieved_rate  REAL,
  achieved_cov   REAL,
  peak_rate      REAL,
  unit           TEXT NOT NULL DEFAULT '',
  reached_target INTEGER NOT NULL DEFAULT 1,
  start_skew_s   REAL,
  UNIQUE (trial_id, seq)
);

CREATE TABLE antagonist_samples (
  antagonist_id INTEGER NOT NULL REFERENCES trial_antagonists (id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  t_s           REAL,
  achieved      REAL,
  target        REAL,
  PRIMARY KEY (antagonist_id, seq)
) WITHOUT ROWID;

CREATE TABLE calibrations (
  id               INTEGER PRIMARY KEY,
  node             TEXT NOT NULL,
  injector         TEXT NOT NULL,
  options_key      TEXT NOT NULL,
  peak_rate        REAL,
  unit             TEXT NOT NULL DEFAULT '',
  measured_unix_ms INTEGER NOT NULL DEFAULT 0,
  UNIQUE (node, injector, options_key)
);
)sql"},
    // 2: how long the calibration measured (rows calibrated before this step read 0 = unknown).
    {"add calibrations.duration_s", R"sql(
ALTER TABLE calibrations ADD COLUMN duration_s REAL DEFAULT 0;
)sql"},
    // 3: every per-trial metric (victim.metric values, lib/analysis/trial_metric.h), so a stored
    // experiment can be re-read under another metric; trials saved before this step have none
    // (codlctl results recomputes them from victim_steps).
    {"create trial_metrics", R"sql(
CREATE TABLE trial_metrics (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  metric   TEXT NOT NULL,  -- "elapsed", "throughput", "mean", "median", "p90", "p99"
  value    REAL,           -- seconds; steps/s for throughput
  PRIMARY KEY (trial_id, metric)
) WITHOUT ROWID;
)sql"},
    // 4: CPU accounting and placement (issue 11): CPU seconds of the victim's tree and of each
    // antagonist instance, its run time, and the CPUs each could run on. Older rows read 0 / ''
    // (not measured).
    {"add CPU seconds and effective CPUs of the victim and antagonists", R"sql(
ALTER TABLE trials ADD COLUMN victim_cpu_s REAL DEFAULT 0;
ALTER TABLE trials ADD COLUMN victim_effective_cpus TEXT NOT NULL DEFAULT '';
ALTER TABLE trial_antagonists ADD COLUMN cpu_s REAL DEFAULT 0;
ALTER TABLE trial_antagonists ADD COLUMN run_s REAL DEFAULT 0;
ALTER TABLE trial_antagonists ADD COLUMN effective_cpus TEXT NOT NULL DEFAULT '';
)sql"},
    // 5: provenance (docs/validity.md): a JSON object per experiment (versions, node snapshots,
    // warm-up runs, per-trial load), and the node snapshot each calibration was measured under.
    {"add experiments.provenance and calibrations.node_fingerprint", R"sql(
ALTER TABLE experiments ADD COLUMN provenance TEXT NOT NULL DEFAULT '{}';
ALTER TABLE calibrations ADD COLUMN node_fingerprint TEXT NOT NULL DEFAULT '';
)sql"},
    // 6: adaptive repetitions (issue 13): why the controller stopped running blocks ("target
    // reached after 12 blocks", "max reached (40) ...", "cancelled"); '' for fixed repetitions
    // and for experiments stored before this step.
    {"add experiments.stop_reason", R"sql(
ALTER TABLE experiments ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
)sql"},
    // 7: the order in which the victim first reported each phase (TrialRecord::phase_order), so
    // a custom victim's phases are not shown alphabetically; rows stored before this step read
    // NULL and keep name order.
    {"add trial_phase_medians.seq", R"sql(
ALTER TABLE trial_phase_medians ADD COLUMN seq INTEGER;
)sql"},
    // 8: why a trial was flagged, as a list (TrialRecord::flag_reasons). trials.error keeps the
    // joined text, so older readers still show it; flagged rows stored before this step have no
    // reasons here and read back as one "unknown" reason holding that text.
    {"create trial_flag_reasons", R"sql(
CREATE TABLE trial_flag_reasons (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  seq      INTEGER NOT NULL,
  code     TEXT NOT NULL,  -- ToString(FlagCode): "missed_target", "did_not_settle", ...
  detail   TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (trial_id, seq)
) WITHOUT ROWID;
)sql"},
    // 9: a failed experiment's kind of failure (ExperimentRecord::error_code, StatusCodeName:
    // "unavailable", ...); '' for one that did not fail and for experiments stored before this.
    {"add experiments.error_code", R"sql(
ALTER TABLE experiments ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
)sql"},
    // 10: every rank of a victim run as several ranks (TrialRecord::ranks): a row per rank
    // with its summary, and the steps of ranks after 0 in victim_steps with their rank (rank
    // 0's steps, and every step stored before this, have rank 0).
    {"create trial_ranks", R"sql(
ALTER TABLE victim_steps ADD COLUMN rank INTEGER NOT NULL DEFAULT 0;
CREATE TABLE trial_ranks (
  trial_id      INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  rank          INTEGER NOT NULL,
  node          TEXT NOT NULL DEFAULT '',
  exit_code     INTEGER NOT NULL DEFAULT 0,
  wall_s        REAL,
  step_median_s REAL,
  busy_median_s REAL,
  phase_medians TEXT NOT NULL DEFAULT '{}',  -- JSON object: phase name -> median seconds
  PRIMARY KEY (trial_id, rank)
) WITHOUT ROWID;
)sql"},
    // 11: which process runs or queued an experiment (ThisProcessToken: host, boot id, pid,
    // start time), so that a later start marks interrupted only what a dead process left
    // queued or running, never what a live `codlctl run` on the same file is doing; '' for
    // rows written before this (their owner is taken as gone).
    {"add experiments.owner", R"sql(
ALTER TABLE experiments ADD COLUMN owner TEXT NOT NULL DEFAULT '';
)sql"},
    // 12: a victim's profiler trace (victim.trace), zlib-compressed Chrome-trace JSON, for the
    // trials that took one (the first of each pairing); `codlctl trace`.
    {"create trial_traces", R"sql(
CREATE TABLE trial_traces (
  trial_id  INTEGER PRIMARY KEY REFERENCES trials (id) ON DELETE CASCADE,
  format    TEXT NOT NULL DEFAULT 'chrome-trace-json+zlib',
  raw_bytes INTEGER NOT NULL,
  data      BLOB NOT NULL
);
)sql"},
    // 13: victim.cache: the bytes under its paths and those resident in the page cache as the
    // victim started, for the trials that measured them.
    {"create trial_cache", R"sql(
CREATE TABLE trial_cache (
  trial_id       INTEGER PRIMARY KEY REFERENCES trials (id) ON DELETE CASCADE,
  total_bytes    INTEGER NOT NULL,
  resident_bytes INTEGER NOT NULL
);
)sql"},
    // 14: a workload antagonist's solo run (no victim ran): a row marks the trial.
    {"create trial_solo", R"sql(
CREATE TABLE trial_solo (
  trial_id INTEGER PRIMARY KEY REFERENCES trials (id) ON DELETE CASCADE
);
)sql"},
    // 15: node telemetry over the victim's window (TrialRecord::node_telemetry), a row per trial
    // and node (seq 0: the victim's node); disks and interfaces as JSON arrays. Memory figures
    // -1 = not read; a NULL share or membw_bytes = not available (membw_note says why).
    {"create trial_node_telemetry", R"sql(
CREATE TABLE trial_node_telemetry (
  trial_id                  INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  seq                       INTEGER NOT NULL,
  node                      TEXT NOT NULL DEFAULT '',
  window_s                  REAL,
  psi_cpu_some              REAL,
  psi_cpu_full              REAL,
  psi_io_some               REAL,
  psi_io_full               REAL,
  psi_memory_some           REAL,
  psi_memory_full           REAL,
  disks                     TEXT NOT NULL DEFAULT '[]',  -- [{"device","read_bytes","write_bytes","reads","writes"}]
  nics                      TEXT NOT NULL DEFAULT '[]',  -- [{"interface","rx_bytes","tx_bytes"}]
  mem_available_start_bytes INTEGER NOT NULL DEFAULT -1,
  mem_available_end_bytes   INTEGER NOT NULL DEFAULT -1,
  mem_available_min_bytes   INTEGER NOT NULL DEFAULT -1,
  cached_start_bytes        INTEGER NOT NULL DEFAULT -1,
  cached_end_bytes          INTEGER NOT NULL DEFAULT -1,
  membw_bytes               REAL,
  membw_note                TEXT NOT NULL DEFAULT '',
  notes                     TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (trial_id, seq)
) WITHOUT ROWID;
)sql"},
    // 16: GPU telemetry over the victim's window (NodeTelemetry::gpus), a row per trial, node
    // (trial_node_telemetry.seq) and NVML device index; the node's gpu_note says where NVML was
    // absent. -1 = not read; a NULL figure = not reported by the GPU (notes says why).
    {"create trial_gpu_telemetry", R"sql(
ALTER TABLE trial_node_telemetry ADD COLUMN gpu_note TEXT NOT NULL DEFAULT '';
CREATE TABLE trial_gpu_telemetry (
  trial_id           INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  seq                INTEGER NOT NULL,  -- the node: trial_node_telemetry.seq
  gpu_index          INTEGER NOT NULL,  -- NVML device index
  name               TEXT NOT NULL DEFAULT '',
  samples            INTEGER NOT NULL DEFAULT 0,
  util_mean          REAL,
  util_max           REAL,
  mem_util_mean      REAL,
  mem_used_max_bytes INTEGER NOT NULL DEFAULT -1,
  mem_total_bytes    INTEGER NOT NULL DEFAULT -1,
  pcie_tx_bytes      REAL,
  pcie_rx_bytes      REAL,
  nvlink_tx_bytes    REAL,
  nvlink_rx_bytes    REAL,
  sm_clock_min_mhz   REAL,
  sm_clock_mean_mhz  REAL,
  mem_clock_min_mhz  REAL,
  mem_clock_mean_mhz REAL,
  clock_reasons      INTEGER NOT NULL DEFAULT -1,  -- NVML clock event reason bits, OR'ed
  notes              TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (trial_id, seq, gpu_index)
) WITHOUT ROWID;
)sql"},
    // 17: who submitted the experiment (ExperimentRecord::submitter, rpc::Identity::ToString:
    // "user-submit/alice", "admin/root"); only that caller or an admin may cancel or resume it.
    // '' for experiments stored before this: owner unknown, so only an admin may change them.
    {"add experiments.submitter", R"sql(
ALTER TABLE experiments ADD COLUMN submitter TEXT NOT NULL DEFAULT '';
CREATE INDEX experiments_by_submitter ON experiments (submitter, created_unix_ms);
)sql"},
    // 18: trial attempts (TrialRecord::attempt and failure, AttemptRecord): a trial's row is its
    // counted, last attempt; the attempts that did not count (retried, cut off) are kept here.
    {"add trial attempts", R"sql(
ALTER TABLE trials ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE trials ADD COLUMN failure_kind TEXT NOT NULL DEFAULT '';
CREATE TABLE trial_attempts (
  experiment_id    TEXT NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  idx              INTEGER NOT NULL,
  attempt          INTEGER NOT NULL,
  state            TEXT NOT NULL,
  failure_kind     TEXT NOT NULL DEFAULT '',
  error            TEXT NOT NULL DEFAULT '',
  victim_node      TEXT NOT NULL DEFAULT '',
  started_unix_ms  INTEGER NOT NULL DEFAULT 0,
  finished_unix_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (experiment_id, idx, attempt)
) WITHOUT ROWID;
)sql"},
};

constexpr int kLatest = static_cast<int>(sizeof kMigrations / sizeof kMigrations[0]);

Result<int> ReadIntPragma(sql::Db db, const char* pragma, std::string_view what) {
  auto stmt = sql::Stmt::Prepare(db, pragma);
  if (!stmt) return stmt.status();
  auto row = stmt->Next(what);
  if (!row) return row.status();
  if (!*row) return db.Fail(what, SQLITE_ERROR);
  int v = static_cast<int>(stmt->Int(0));
  stmt->Reset();
  return v;
}

std::string NewerMessage(const sql::Db& db, int version) {
  return "database " + *db.path + " has schema version " + std::to_string(version) +
         ", newer than this build of CoDL knows (latest " + std::to_string(kLatest) +
         "); use a newer codl, or another results file";
}

// A file with tables but no CoDL version (or another application's id) is not ours: refuse it
// rather than add our tables beside someone else's.
Status CheckIsCodlDatabase(sql::Db db, int version) {
  auto app_id = ReadIntPragma(db, "PRAGMA application_id", "reading the application id");
  if (!app_id) return app_id.status();
  if (*app_id != 0 && *app_id != kApplicationId) {
    return Err(*db.path + " is a SQLite database of another application (application_id " +
               std::to_string(*app_id) + "), not a CoDL results database");
  }
  if (version != 0) return Status::Ok();
  auto stmt =
      sql::Stmt::Prepare(db, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
  if (!stmt) return stmt.status();
  auto row = stmt->Next("reading the schema");
  if (!row) return row.status();
  if (*row && stmt->Int(0) > 0) {
    return Err(*db.path +
               " is a SQLite database with tables but no CoDL schema version; not a CoDL "
               "results database");
  }
  return Status::Ok();
}

}  // namespace

int LatestMigration() { return kLatest; }

Result<int> ReadSchemaVersion(sql::Db db) {
  return ReadIntPragma(db, "PRAGMA user_version", "reading the schema version");
}

Status CheckCompatible(sql::Db db) {
  sql::Txn txn(db);  // one snapshot: the version and the table list must agree
  if (Status s = txn.Begin(sql::Txn::Kind::kRead, "checking the schema"); !s) return s;
  auto version = ReadSchemaVersion(db);
  if (!version) return version.status();
  if (*version > kLatest) return Err(NewerMessage(db, *version));
  if (Status s = CheckIsCodlDatabase(db, *version); !s) return s;
  return txn.Commit("checking the schema");
}

Status Migrate(sql::Db db, int target) {
  if (target < 1 || target > kLatest) {
    return Err("schema version " + std::to_string(target) + " does not exist (1.." +
               std::to_string(kLatest) + ")");
  }
  auto version = ReadSchemaVersion(db);
  if (!version) return version.status();
  if (*version > kLatest) return Err(NewerMessage(db, *version));
  // Up to date: no write lock needed, so a reader opening beside a busy writer never waits here.
  if (*version == target) return Status::Ok();
  if (*version > target) {
    return Err("database " + *db.path + " has schema version " + std::to_string(*version) +
               ", newer than the requested " + std::to_string(target));
  }
  while (true) {
    sql::Txn txn(db);
    if (Status s = txn.Begin(sql::Txn::Kind::kWrite, "starting a migration"); !s) return s;
    version = ReadSchemaVersion(db);  // another process may have migrated meanwhile
    if (!version) return version.status();
    if (*version > kLatest) return Err(NewerMessage(db, *version));
    if (Status s = CheckIsCodlDatabase(db, *version); !s) return s;
    if (*version >= target) return Status::Ok();  // txn rolls back: nothing was written
    const int next = *version + 1;
    const Migration& m = kMigrations[next - 1];
    const std::string what =
        "applying schema migration " + std::to_string(next) + " (" + m.what + ")";
    if (Status s = db.Exec(m.sql, what); !s) return s;
    const std::string set_version = "PRAGMA user_version = " + std::to_string(next);
    if (Status s = db.Exec(set_version.c_str(), what); !s) return s;
    if (Status s = txn.Commit(what); !s) return s;
  }
}

}  // namespace codl::store
