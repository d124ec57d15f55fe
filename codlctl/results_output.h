// Loading an experiment's records (from a controller, or straight from a database file with
// --db, no controller needed) and printing them as table/CSV/JSON or an HTML report.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::cli {

class ControllerClient;

// From `db` when non-empty, else from `client`.
Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> LoadRecords(ControllerClient* client,
                                                                          const std::string& db,
                                                                          const std::string& id);
int PrintResults(ControllerClient* client, const std::string& db, const std::string& id,
                 const std::string& output, FILE* out);
int WriteReport(ControllerClient* client, const std::string& db, const std::string& id,
                const std::string& path);

}  // namespace codl::cli
