// Thin RAII helpers over the SQLite C API: a connection handle that knows its file name (every
// error names the database), prepared statements, and transactions that roll back unless
// committed. Internal to codl_store; nothing here throws.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl::store::sql {

// What a failed SQLite call means to the caller: a full disk is kResourceExhausted, a read-only
// or unopenable file kFailedPrecondition, a corrupt one kDataLoss, anything else kUnknown.
StatusCode StoreErrorCode(int rc);

// A borrowed connection plus the path used in error messages. Cheap to copy.
struct Db {
  sqlite3* handle = nullptr;
  const std::string* path = nullptr;

  // "<what> in <path>: <sqlite message>", coded by StoreErrorCode(rc). Uses the connection's last
  // error message when it matches `rc` (more specific: names the constraint), else the generic text
  // for `rc`.
  Error Fail(std::string_view what, int rc) const;
  // Runs one or more statements that return no rows.
  Status Exec(const char* sql, std::string_view what) const;
};

// A prepared statement. Bind* errors are remembered and reported by the next Run/Next.
class Stmt {
 public:
  static Result<Stmt> Prepare(Db db, const char* sql);
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Parameters are 1-based, as in SQLite.
  void BindInt(int i, int64_t v);
  void BindReal(int i, double v);  // NaN is stored as NULL (SQLite's rule); read back as NaN
  void BindBool(int i, bool v) { BindInt(i, v ? 1 : 0); }
  void BindText(int i, std::string_view v);  // copied; embedded NULs and any bytes preserved
  void BindBlob(int i, std::string_view v);  // copied, stored as a BLOB

  // Executes a statement that returns no rows, then resets it (bindings cleared) for reuse.
  Status Run(std::string_view what);
  // Steps a query: true = a row is ready, false = done (the statement is then reset).
  Result<bool> Next(std::string_view what);
  void Reset();

  // Columns are 0-based.
  int64_t Int(int col) const;
  double Real(int col) const;  // NULL -> NaN
  bool Bool(int col) const { return Int(col) != 0; }
  std::string Text(int col) const;
  std::string Blob(int col) const;
  bool IsNull(int col) const;

 private:
  Stmt(Db db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Db db_;
  sqlite3_stmt* s_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

// BEGIN ... COMMIT; the destructor rolls back a transaction that was begun and not committed.
class Txn {
 public:
  enum class Kind {
    kRead,   // BEGIN DEFERRED: a consistent WAL snapshot across several SELECTs, no write lock
    kWrite,  // BEGIN IMMEDIATE: takes the write lock up front, so busy_timeout applies to it
             // (a deferred txn upgrading to write in WAL fails with SQLITE_BUSY at once)
  };
  explicit Txn(Db db) : db_(db) {}
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn();

  Status Begin(Kind kind, std::string_view what);
  Status Commit(std::string_view what);

 private:
  Db db_;
  bool active_ = false;
};

}  // namespace codl::store::sql
