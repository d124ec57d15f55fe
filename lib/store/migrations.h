// Versioned schema migrations. The database's PRAGMA user_version is the number of the last
// applied step; steps are applied in order, each in its own write transaction, and never edited
// once released: a schema change is a new step appended to the list in migrations.cc.
#pragma once

#include "lib/common/result.h"
#include "lib/store/sqlite_util.h"

namespace codl::store {

// 'CoDL' in ASCII, stored in PRAGMA application_id so a foreign SQLite file is recognized.
inline constexpr int kApplicationId = 0x436F444C;

int LatestMigration();
// The step that added experiments.owner (Store::MarkUnfinishedInterrupted).
inline constexpr int kOwnerSchemaVersion = 11;
// The step that added experiments.submitter (ExperimentRecord::submitter).
inline constexpr int kSubmitterSchemaVersion = 17;

// Reads the database's schema version (PRAGMA user_version).
Result<int> ReadSchemaVersion(sql::Db db);

// Refuses a database newer than this code knows, or a SQLite file that is not a CoDL results
// database (another application's id, or tables without a CoDL version). Writes nothing, so Open
// runs it before switching the file to WAL.
Status CheckCompatible(sql::Db db);

// Brings the database up to `target` (1..LatestMigration()). Refuses a database newer than this
// code knows, or a SQLite file that is not a CoDL results database. Safe when several processes
// open the same file at once: the version is re-read under the write lock before each step.
Status Migrate(sql::Db db, int target);

}  // namespace codl::store
