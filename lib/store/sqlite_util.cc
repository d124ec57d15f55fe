#include "lib/store/sqlite_util.h"

#include <limits>
#include <utility>

namespace codl::store::sql {

StatusCode StoreErrorCode(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL: return StatusCode::kResourceExhausted;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN: return StatusCode::kFailedPrecondition;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return StatusCode::kDataLoss;
    default: return StatusCode::kUnknown;
  }
}

Error Db::Fail(std::string_view what, int rc) const {
  std::string msg(what);
  msg += " in ";
  msg += path ? *path : std::string("(unnamed database)");
  msg += ": ";
  // sqlite3_errcode is the connection's last (extended) code; its message is the specific one.
  if (handle &&
      (sqlite3_extended_errcode(handle) == rc || sqlite3_errcode(handle) == (rc & 0xff))) {
    msg += sqlite3_errmsg(handle);
  } else {
    msg += sqlite3_errstr(rc);
  }
  return Error{std::move(msg), StoreErrorCode(rc)};
}

Status Db::Exec(const char* sql, std::string_view what) const {
  char* err = nullptr;
  int rc = sqlite3_exec(handle, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg(what);
  msg += " in ";
  msg += *path;
  msg += ": ";
  msg += err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Error{std::move(msg), StoreErrorCode(rc)};
}

Result<Stmt> Stmt::Prepare(Db db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db.handle, sql, -1, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return db.Fail(
        std::string("preparing \"") + std::string(std::string_view(sql).substr(0, 60)) + "\"", rc);
  }
  return Stmt(db, s);
}

Stmt::Stmt(Stmt&& other) noexcept
    : db_(other.db_), s_(std::exchange(other.s_, nullptr)), bind_rc_(other.bind_rc_) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(s_);
    db_ = other.db_;
    s_ = std::exchange(other.s_, nullptr);
    bind_rc_ = other.bind_rc_;
  }
  return *this;
}

Stmt::~Stmt() { sqlite3_finalize(s_); }

void Stmt::BindInt(int i, int64_t v) {
  int rc = sqlite3_bind_int64(s_, i, v);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Stmt::BindReal(int i, double v) {
  int rc = sqlite3_bind_double(s_, i, v);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Stmt::BindText(int i, std::string_view v) {
  int rc = sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Stmt::BindBlob(int i, std::string_view v) {
  int rc = sqlite3_bind_blob64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

Status Stmt::Run(std::string_view what) {
  if (bind_rc_ != SQLITE_OK) {
    int rc = bind_rc_;
    Reset();
    return db_.Fail(what, rc);
  }
  int rc = sqlite3_step(s_);
  while (rc == SQLITE_ROW) rc = sqlite3_step(s_);  // e.g. a PRAGMA that echoes its value
  if (rc != SQLITE_DONE) {
    Error e = db_.Fail(what, rc);
    Reset();
    return e;
  }
  Reset();
  return Status::Ok();
}

Result<bool> Stmt::Next(std::string_view what) {
  if (bind_rc_ != SQLITE_OK) {
    int rc = bind_rc_;
    Reset();
    return db_.Fail(what, rc);
  }
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    Reset();
    return false;
  }
  Error e = db_.Fail(what, rc);
  Reset();
  return e;
}

void Stmt::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  bind_rc_ = SQLITE_OK;
}

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(s_, col); }

double Stmt::Real(int col) const {
  if (sqlite3_column_type(s_, col) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(s_, col);
}

std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(s_, col);
  if (!p) return {};
  int n = sqlite3_column_bytes(s_, col);  // after column_text, as SQLite requires
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

std::string Stmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(s_, col);
  if (!p) return {};
  const int n = sqlite3_column_bytes(s_, col);
  return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
}

bool Stmt::IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

Txn::~Txn() {
  if (active_) sqlite3_exec(db_.handle, "ROLLBACK", nullptr, nullptr, nullptr);
}

Status Txn::Begin(Kind kind, std::string_view what) {
  Status s = db_.Exec(kind == Kind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", what);
  if (s.ok()) active_ = true;
  return s;
}

Status Txn::Commit(std::string_view what) {
  Status s = db_.Exec("COMMIT", what);
  // A failed COMMIT (e.g. SQLITE_BUSY) leaves the transaction open; the destructor rolls it back.
  if (s.ok()) active_ = false;
  return s;
}

}  // namespace codl::store::sql
