#include "lib/common/records.h"

namespace codl {
namespace {
constexpr const char* kExperimentStates[] = {"queued", "running",   "done",
                                             "failed", "cancelled", "interrupted"};
constexpr const char* kTrialStates[] = {"pending", "running", "done",
                                        "failed",  "flagged", "cancelled"};
constexpr const char* kFlagCodes[] = {"unknown", "missed_target", "did_not_settle",
                                      "too_few_samples"};
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

const char* ToString(FlagCode c) { return kFlagCodes[static_cast<int>(c)]; }

FlagCode ParseFlagCode(const std::string& s) {
  for (int i = 0; i < 4; ++i) {
    if (s == kFlagCodes[i]) return static_cast<FlagCode>(i);
  }
  return FlagCode::kUnknown;
}

std::string JoinFlagReasons(const std::vector<FlagReason>& reasons) {
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : "; ") + r.detail;
  return out;
}

void RestoreFlagReasons(TrialRecord* t) {
  if (t->state != TrialState::kFlagged || !t->flag_reasons.empty() || t->error.empty()) return;
  t->flag_reasons.push_back({FlagCode::kUnknown, t->error});
}

}  // namespace codl
