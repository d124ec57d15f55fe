// Store: opening (pragmas, migrations), experiments and calibrations. Trials: store_trials.cc.
#include "lib/store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "lib/common/process_token.h"
#include "lib/store/migrations.h"
#include "lib/store/sqlite_util.h"
#include "lib/store/store_internal.h"

namespace codl::store {
namespace {

// Long enough to ride out any single write transaction (a SaveTrial with thousands of samples
// takes milliseconds), short enough that a wedged peer surfaces as an error, not a hang.
// CODL_STORE_BUSY_TIMEOUT_MS (1 to 3600000) replaces it, e.g. for a database on a slow network
// file system (docs/results.md); any other value is an error naming the variable and its range.
constexpr int kDefaultBusyTimeoutMs = 10000;

Result<int> BusyTimeoutMs() {
  const char* env = std::getenv("CODL_STORE_BUSY_TIMEOUT_MS");
  if (env == nullptr || *env == '\0') return kDefaultBusyTimeoutMs;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(env, &end, 10);
  if (errno != 0 || *end != '\0' || v < 1 || v > 3600000) {
    return InvalidArgument("CODL_STORE_BUSY_TIMEOUT_MS='" + std::string(env) +
                           "': expected whole milliseconds from 1 to 3600000 (default " +
                           std::to_string(kDefaultBusyTimeoutMs) + ")");
  }
  return static_cast<int>(v);
}

// Why a database file could not be opened, as far as its folder shows: "" when nothing tells.
std::string OpenFailureReason(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
    return " (the file system holding " + dir + " is mounted read-only)";
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return " (" + dir + ": " + std::strerror(errno) + ")";
  if (!S_ISDIR(st.st_mode)) return " (" + dir + " is not a directory)";
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return " (cannot create files in " + dir + ": " + std::strerror(errno) + ")";
  }
  return "";
}

// A store at a schema before kSubmitterSchemaVersion (or kOwnerSchemaVersion; tests only) reads
// '' for the submitter (the owner).
std::string ExperimentColumns(bool has_submitter, bool has_owner) {
  return std::string(
             "id, name, source_path, yaml, state, error, seed, total_trials, created_unix_ms, "
             "finished_unix_ms, provenance, stop_reason, error_code, ") +
         (has_submitter ? "submitter" : "''") + (has_owner ? ", owner" : ", ''");
}

Result<ExperimentRecord> ReadExperiment(sql::Db db, const sql::Stmt& row) {
  ExperimentRecord e;
  e.id = row.Text(0);
  e.name = row.Text(1);
  e.source_path = row.Text(2);
  e.yaml = row.Text(3);
  const std::string state = row.Text(4);
  if (!ParseExperimentState(state, &e.state)) {
    return Err("experiment '" + e.id + "' in " + *db.path + " has unknown state '" + state + "'");
  }
  e.error = row.Text(5);
  e.seed = static_cast<uint64_t>(row.Int(6));
  e.total_trials = static_cast<int>(row.Int(7));
  e.created_unix_ms = row.Int(8);
  e.finished_unix_ms = row.Int(9);
  e.provenance_json = row.Text(10);
  e.stop_reason = row.Text(11);
  const std::string code = row.Text(12);
  e.error_code = code.empty() ? StatusCode::kOk : StatusCodeFromName(code);
  e.submitter = row.Text(13);
  e.owner = row.Text(14);
  return e;
}

CalibrationRecord ReadCalibration(const sql::Stmt& row) {
  CalibrationRecord c;
  c.node = row.Text(0);
  c.injector = row.Text(1);
  c.options_key = row.Text(2);
  c.peak_rate = row.Real(3);
  c.unit = row.Text(4);
  c.duration_s = row.Real(5);
  c.measured_unix_ms = row.Int(6);
  c.node_fingerprint = row.Text(7);
  return c;
}

constexpr const char* kCalibrationColumns =
    "node, injector, options_key, peak_rate, unit, duration_s, measured_unix_ms, "
    "node_fingerprint";

}  // namespace

Error NoSuchExperiment(sql::Db db, const std::string& id) {
  return NotFound("no experiment '" + id + "' in " + *db.path);
}

Result<std::string> ResolveExperimentId(sql::Db db, const std::string& id) {
  const bool latest = id == kLatestId;
  auto stmt = sql::Stmt::Prepare(
      db, latest ? "SELECT id FROM experiments ORDER BY created_unix_ms DESC, rowid DESC LIMIT 1"
                 : "SELECT id FROM experiments WHERE id = ?1");
  if (!stmt) return stmt.status();
  if (!latest) stmt->BindText(1, id);
  auto row = stmt->Next("looking up experiment '" + id + "'");
  if (!row) return row.status();
  if (!*row) {
    if (latest) return NotFound("no experiments in " + *db.path);
    return NoSuchExperiment(db, id);
  }
  return stmt->Text(0);
}

Store::Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

Store::~Store() { sqlite3_close_v2(db_); }

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  return OpenImpl(path, LatestMigration());
}

Result<std::unique_ptr<Store>> Store::OpenExisting(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return NotFound("no database file '" + path + "'");
  return Open(path);
}

Result<std::unique_ptr<Store>> Store::OpenAtSchemaVersionForTesting(const std::string& path,
                                                                    int schema_version) {
  return OpenImpl(path, schema_version);
}

int Store::LatestSchemaVersion() { return LatestMigration(); }

Result<std::unique_ptr<Store>> Store::OpenImpl(const std::string& path, int schema_version) {
  if (path.empty()) return Err("results database path is empty");
  const Result<int> busy_timeout_ms = BusyTimeoutMs();
  if (!busy_timeout_ms) return busy_timeout_ms.status();
  sqlite3* handle = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  // From here the Store owns the handle (sqlite3_open_v2 allocates one even when it fails).
  std::unique_ptr<Store> store(new Store(handle, path));
  sql::Db db{handle, &store->path_};
  if (rc != SQLITE_OK) {
    Error e = db.Fail("opening the results database", rc);
    // SQLite says only "unable to open database file": say why when the folder tells.
    e.message += OpenFailureReason(path);
    return e;
  }
  sqlite3_extended_result_codes(handle, 1);
  sqlite3_busy_timeout(handle, *busy_timeout_ms);

  // Per connection, and only outside a transaction: enforce the parent/child links so replacing
  // a trial also deletes its steps, antagonists and samples (ON DELETE CASCADE).
  if (Status s = db.Exec("PRAGMA foreign_keys = ON", "enabling foreign keys"); !s) return s;
  // Before any write (even the switch to WAL): refuse foreign files and newer schemas untouched.
  if (Status s = CheckCompatible(db); !s) return s;

  // WAL: readers (codlctl results) and the writer (controller) don't block each other, and a
  // commit is one append to the log. The mode is persistent in the file.
  // The switch needs a moment of exclusive access and SQLite does not always apply busy_timeout
  // to it (a peer opening the same new file at once gets SQLITE_BUSY at once): retry here.
  std::string got;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(*busy_timeout_ms);
  while (true) {
    auto mode = sql::Stmt::Prepare(db, "PRAGMA journal_mode = WAL");
    if (!mode) return mode.status();
    auto row = mode->Next("switching to WAL");
    if (row) {
      got = *row ? mode->Text(0) : "";
      break;
    }
    const int code = sqlite3_errcode(handle);
    if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) ||
        std::chrono::steady_clock::now() > deadline) {
      return row.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (got != "wal" && got != "memory") {
    return Err("cannot use write-ahead logging for " + path + " (journal_mode stays '" + got +
               "'; is it on a network filesystem?)");
  }
  // synchronous=NORMAL in WAL mode: a commit is in the OS page cache before SaveTrial returns,
  // so it survives the controller being killed (kill -9, OOM, crash) at any moment; only an OS
  // crash or power loss can lose the last transactions (never corrupt the file). FULL would add
  // an fsync per trial for that case alone, which a re-run trial makes up for more cheaply.
  if (Status s = db.Exec("PRAGMA synchronous = NORMAL", "setting synchronous"); !s) return s;

  if (Status s = Migrate(db, schema_version); !s) return s;
  store->has_owner_ = schema_version >= kOwnerSchemaVersion;
  store->has_submitter_ = schema_version >= kSubmitterSchemaVersion;
  return store;
}

int Store::SchemaVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  auto v = ReadSchemaVersion(sql::Db{db_, &path_});
  return v ? *v : -1;
}

Status Store::CreateExperiment(const ExperimentRecord& e) {
  if (e.id.empty()) return Err("cannot store an experiment without an id in " + path_);
  if (e.id == kLatestId) {
    return Err("experiment id 'latest' is reserved (it names the newest experiment)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "creating experiment '" + e.id + "'";
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kWrite, what); !s) return s;
  auto exists = sql::Stmt::Prepare(db, "SELECT 1 FROM experiments WHERE id = ?1");
  if (!exists) return exists.status();
  exists->BindText(1, e.id);
  auto found = exists->Next(what);
  if (!found) return found.status();
  if (*found) return Err("experiment '" + e.id + "' already exists in " + path_);

  // Stores at older schemas (tests only) lack the later columns.
  std::string columns =
      "id, name, source_path, yaml, state, error, seed, total_trials, created_unix_ms, "
      "finished_unix_ms";
  std::string values = "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10";
  if (has_owner_) columns += ", owner", values += ", ?11";
  if (has_submitter_) columns += ", submitter", values += ", ?12";
  auto insert = sql::Stmt::Prepare(
      db, ("INSERT INTO experiments (" + columns + ") VALUES (" + values + ")").c_str());
  if (!insert) return insert.status();
  insert->BindText(1, e.id);
  insert->BindText(2, e.name);
  insert->BindText(3, e.source_path);
  insert->BindText(4, e.yaml);
  insert->BindText(5, ToString(e.state));
  insert->BindText(6, e.error);
  insert->BindInt(7, static_cast<int64_t>(e.seed));  // bit-exact; read back as uint64
  insert->BindInt(8, e.total_trials);
  insert->BindInt(9, e.created_unix_ms);
  insert->BindInt(10, e.finished_unix_ms);
  if (has_owner_) insert->BindText(11, ThisProcessToken());
  if (has_submitter_) insert->BindText(12, e.submitter);
  if (Status s = insert->Run(what); !s) return s;
  return txn.Commit(what);
}

Status Store::KeepReserve() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = path_ + "-reserve";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Error{"cannot create the reserve file " + path + ": " + strerror(errno),
                 errno == ENOSPC ? StatusCode::kResourceExhausted : StatusCode::kUnknown};
  }
  const int rc = posix_fallocate(fd, 0, kReserveBytes);
  close(fd);
  if (rc != 0) {
    unlink(path.c_str());
    return Error{"cannot keep " + std::to_string(kReserveBytes >> 10) + " KiB in reserve beside " +
                     path_ + " (" + strerror(rc) +
                     "): a full disk may leave an experiment's "
                     "final state unwritten",
                 rc == ENOSPC ? StatusCode::kResourceExhausted : StatusCode::kUnknown};
  }
  reserve_path_ = path;
  return Status::Ok();
}

bool Store::ReleaseReserveLocked() {
  if (reserve_path_.empty()) return false;
  const bool freed = unlink(reserve_path_.c_str()) == 0;
  reserve_path_.clear();
  return freed;
}

Status Store::UpdateExperiment(const std::string& id, ExperimentState state,
                               const std::string& error, int64_t finished_unix_ms,
                               StatusCode error_code) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool final = state != ExperimentState::kQueued && state != ExperimentState::kRunning;
  for (int attempt = 0;; ++attempt) {
    Status s = UpdateExperimentLocked(id, state, error, finished_unix_ms, error_code);
    // A final state is what a full disk must not lose: the reserve makes room for it.
    if (s.ok() || !final || s.code() != StatusCode::kResourceExhausted || attempt > 0 ||
        !ReleaseReserveLocked()) {
      return s;
    }
  }
}

Status Store::UpdateExperimentLocked(const std::string& id, ExperimentState state,
                                     const std::string& error, int64_t finished_unix_ms,
                                     StatusCode error_code) {
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(db, has_owner_ ? "UPDATE experiments SET state = ?2, error = ?3, "
                                                  "finished_unix_ms = ?4, error_code = ?5, "
                                                  "owner = ?6 WHERE id = ?1"
                                                : "UPDATE experiments SET state = ?2, error = ?3, "
                                                  "finished_unix_ms = ?4, error_code = ?5 "
                                                  "WHERE id = ?1");
  if (!stmt) return stmt.status();
  stmt->BindText(1, id);
  stmt->BindText(2, ToString(state));
  stmt->BindText(3, error);
  stmt->BindInt(4, finished_unix_ms);
  stmt->BindText(5, error_code == StatusCode::kOk ? "" : StatusCodeName(error_code));
  // The process that last moved it owns it (read only while it is queued or running: resume,
  // requeue, MarkUnfinishedInterrupted).
  if (has_owner_) stmt->BindText(6, ThisProcessToken());
  if (Status s = stmt->Run("updating experiment '" + id + "'"); !s) return s;
  if (sqlite3_changes(db_) == 0) return NoSuchExperiment(db, id);
  return Status::Ok();
}

Status Store::SetProvenance(const std::string& id, const std::string& provenance_json) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(db, "UPDATE experiments SET provenance = ?2 WHERE id = ?1");
  if (!stmt) return stmt.status();
  stmt->BindText(1, id);
  stmt->BindText(2, provenance_json);
  if (Status s = stmt->Run("saving the provenance of experiment '" + id + "'"); !s) return s;
  if (sqlite3_changes(db_) == 0) return NoSuchExperiment(db, id);
  return Status::Ok();
}

Status Store::SetStopReason(const std::string& id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(db, "UPDATE experiments SET stop_reason = ?2 WHERE id = ?1");
  if (!stmt) return stmt.status();
  stmt->BindText(1, id);
  stmt->BindText(2, reason);
  if (Status s = stmt->Run("saving the stop reason of experiment '" + id + "'"); !s) return s;
  if (sqlite3_changes(db_) == 0) return NoSuchExperiment(db, id);
  return Status::Ok();
}

Result<ExperimentRecord> Store::GetExperiment(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const std::string what = "reading experiment '" + id + "'";
  sql::Txn txn(db);  // "latest" and the row must come from the same snapshot
  if (Status s = txn.Begin(sql::Txn::Kind::kRead, what); !s) return s;
  auto resolved = ResolveExperimentId(db, id);
  if (!resolved) return resolved.status();
  auto stmt = sql::Stmt::Prepare(db, ("SELECT " + ExperimentColumns(has_submitter_, has_owner_) +
                                      " FROM experiments WHERE id = ?1")
                                         .c_str());
  if (!stmt) return stmt.status();
  stmt->BindText(1, *resolved);
  auto row = stmt->Next(what);
  if (!row) return row.status();
  if (!*row) return NoSuchExperiment(db, id);
  auto e = ReadExperiment(db, *stmt);
  stmt->Reset();
  if (!e) return e;
  if (Status s = txn.Commit(what); !s) return s;
  return e;
}

Result<std::optional<std::string>> Store::LatestExperimentOf(const std::string& submitter) {
  if (submitter.empty() || !has_submitter_) return std::optional<std::string>();
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  // SameSubmitter in SQL: the same text, or the same name after the role's '/'.
  auto stmt = sql::Stmt::Prepare(
      db,
      "SELECT id FROM experiments WHERE submitter = ?1 OR (?2 != '' AND instr(submitter, '/') > 0 "
      "AND substr(submitter, instr(submitter, '/') + 1) = ?2) "
      "ORDER BY created_unix_ms DESC, rowid DESC LIMIT 1");
  if (!stmt) return stmt.status();
  stmt->BindText(1, submitter);
  stmt->BindText(2, SubmitterName(submitter));
  auto row = stmt->Next("looking up the latest experiment of " + submitter);
  if (!row) return row.status();
  if (!*row) return std::optional<std::string>();
  std::string id = stmt->Text(0);
  stmt->Reset();
  return std::optional<std::string>(std::move(id));
}

Result<std::vector<ExperimentRecord>> Store::ListExperiments() {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(db, ("SELECT " + ExperimentColumns(has_submitter_, has_owner_) +
                                      " FROM experiments ORDER BY created_unix_ms DESC, rowid DESC")
                                         .c_str());
  if (!stmt) return stmt.status();
  std::vector<ExperimentRecord> out;
  while (true) {
    auto row = stmt->Next("listing experiments");
    if (!row) return row.status();
    if (!*row) break;
    auto e = ReadExperiment(db, *stmt);
    if (!e) return e.status();
    out.push_back(std::move(e).value());
  }
  return out;
}

Result<Store::Unfinished> Store::MarkUnfinishedInterrupted(bool keep_queued) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  const char* what = "marking unfinished experiments interrupted";
  sql::Txn txn(db);
  if (Status s = txn.Begin(sql::Txn::Kind::kWrite, what); !s) return s;
  auto select = sql::Stmt::Prepare(db,
                                   "SELECT id, state, owner FROM experiments "
                                   "WHERE state IN ('queued', 'running') "
                                   "ORDER BY created_unix_ms, rowid");
  if (!select) return select.status();
  Unfinished out;
  while (true) {
    auto row = select->Next(what);
    if (!row) return row.status();
    if (!*row) break;
    const std::string owner = select->Text(2);
    // A live process other than this one is running or queued it: not ours to touch. (This
    // process's own rows are left by a controller it ran before: a test, or a restart.)
    if (owner != ThisProcessToken() && ProcessTokenAlive(owner)) continue;
    (keep_queued && select->Text(1) == "queued" ? out.requeued : out.interrupted)
        .push_back(select->Text(0));
  }
  select->Reset();
  if (out.interrupted.empty() && out.requeued.empty()) return out;  // nothing written
  const std::string cancel_sql = std::string(
                                     "UPDATE trials SET state = 'cancelled', "
                                     "  error = CASE WHEN error = '' THEN '") +
                                 kTrialCutOffError +
                                 "' ELSE error END WHERE state = 'running' AND experiment_id = ?1";
  auto cancel_trials = sql::Stmt::Prepare(db, cancel_sql.c_str());
  if (!cancel_trials) return cancel_trials.status();
  auto mark = sql::Stmt::Prepare(db,
                                 "UPDATE experiments SET state = 'interrupted', "
                                 "  error = 'controller stopped while the experiment ran', "
                                 "  owner = '' WHERE id = ?1");
  if (!mark) return mark.status();
  for (const auto& id : out.interrupted) {
    cancel_trials->BindText(1, id);
    if (Status s = cancel_trials->Run(what); !s) return s;
    mark->BindText(1, id);
    if (Status s = mark->Run(what); !s) return s;
  }
  auto claim = sql::Stmt::Prepare(db, "UPDATE experiments SET owner = ?2 WHERE id = ?1");
  if (!claim) return claim.status();
  for (const auto& id : out.requeued) {
    claim->BindText(1, id);
    claim->BindText(2, ThisProcessToken());
    if (Status s = claim->Run(what); !s) return s;
  }
  if (Status s = txn.Commit(what); !s) return s;
  return out;
}

Status Store::PutCalibration(const CalibrationRecord& c) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(
      db,
      "INSERT INTO calibrations (node, injector, options_key, peak_rate, unit, duration_s, "
      "measured_unix_ms, node_fingerprint) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
      "ON CONFLICT (node, injector, options_key) DO UPDATE SET peak_rate = excluded.peak_rate, "
      "unit = excluded.unit, duration_s = excluded.duration_s, "
      "measured_unix_ms = excluded.measured_unix_ms, "
      "node_fingerprint = excluded.node_fingerprint");
  if (!stmt) return stmt.status();
  stmt->BindText(1, c.node);
  stmt->BindText(2, c.injector);
  stmt->BindText(3, c.options_key);
  stmt->BindReal(4, c.peak_rate);
  stmt->BindText(5, c.unit);
  stmt->BindReal(6, c.duration_s);
  stmt->BindInt(7, c.measured_unix_ms);
  stmt->BindText(8, c.node_fingerprint);
  return stmt->Run("saving the calibration of " + c.injector + " on " + c.node);
}

Result<std::optional<CalibrationRecord>> Store::GetCalibration(const std::string& node,
                                                               const std::string& injector,
                                                               const std::string& options_key) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(db, (std::string("SELECT ") + kCalibrationColumns +
                                      " FROM calibrations WHERE node = ?1 AND injector = ?2 AND "
                                      "options_key = ?3")
                                         .c_str());
  if (!stmt) return stmt.status();
  stmt->BindText(1, node);
  stmt->BindText(2, injector);
  stmt->BindText(3, options_key);
  auto row = stmt->Next("reading the calibration of " + injector + " on " + node);
  if (!row) return row.status();
  if (!*row) return std::optional<CalibrationRecord>();
  CalibrationRecord c = ReadCalibration(*stmt);
  stmt->Reset();
  return std::optional<CalibrationRecord>(std::move(c));
}

Result<std::vector<CalibrationRecord>> Store::ListCalibrations() {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Db db{db_, &path_};
  auto stmt = sql::Stmt::Prepare(db, (std::string("SELECT ") + kCalibrationColumns +
                                      " FROM calibrations ORDER BY node, injector, options_key")
                                         .c_str());
  if (!stmt) return stmt.status();
  std::vector<CalibrationRecord> out;
  while (true) {
    auto row = stmt->Next("listing calibrations");
    if (!row) return row.status();
    if (!*row) break;
    out.push_back(ReadCalibration(*stmt));
  }
  return out;
}

}  // namespace codl::store
