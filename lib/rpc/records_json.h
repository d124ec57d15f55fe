// JSON encoding of the results model (common/records.h), used to carry experiments and trials
// from the controller to the CLI (GetResults) so that both compute statistics with one code path.
#pragma once

#include <string>
#include <vector>

#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::rpc {

std::string ExperimentToJson(const ExperimentRecord& e);
Result<ExperimentRecord> ExperimentFromJson(const std::string& json);
std::string TrialsToJson(const std::vector<TrialRecord>& trials);
Result<std::vector<TrialRecord>> TrialsFromJson(const std::string& json);

}  // namespace codl::rpc
