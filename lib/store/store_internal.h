// Helpers shared by store.cc (experiments, calibrations) and store_trials.cc. Internal.
#pragma once

#include <string>

#include "lib/common/result.h"
#include "lib/store/sqlite_util.h"

namespace codl::store {

inline constexpr const char* kLatestId = "latest";

// "no experiment 'X' in FILE".
Error NoSuchExperiment(sql::Db db, const std::string& id);

// Maps "latest" to the newest experiment's id (created time, ties broken by insertion order);
// checks that any other id exists. Call inside a transaction for a consistent answer.
Result<std::string> ResolveExperimentId(sql::Db db, const std::string& id);

}  // namespace codl::store
