#include "lib/common/records.h"

namespace codl {
namespace {
constexpr const char* kExperimentStates[] = {"queued", "running",   "done",
                                             "failed", "cancelled", "interrupted"};
constexpr const char* kTrialStates[] = {"pending", "running", "done",
                                        "failed",  "flagged", "cancelled"};
}  // namespace

const char* ToString(ExperimentState s) { return kExperimentStates[static_cast<int>(s)]; }
const char* ToString(TrialState s) { return kTrialStates[static_cast<int>(s)]; }

bool ParseExperimentState(const std::string& s, ExperimentState* out) {
  for (int i = 0; i < 6; ++i) {
    if (s == kExperimentStates[i]) {
      *out = static_cast<ExperimentState>(i);
      return true;
    }
  }
  return false;
}

bool ParseTrialState(const std::string& s, TrialState* out) {
  for (int i = 0; i < 6; ++i) {
    if (s == kTrialStates[i]) {
      *out = static_cast<TrialState>(i);
      return true;
    }
  }
  return false;
}

}  // namespace codl
