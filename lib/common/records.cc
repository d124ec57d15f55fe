#include "lib/common/records.h"

#include <iterator>

#include "lib/common/utf8.h"

namespace codl {
namespace {
constexpr const char* kExperimentStates[] = {"queued", "running",   "done",
                                             "failed", "cancelled", "interrupted"};
constexpr const char* kTrialStates[] = {"pending", "running", "done",
                                        "failed",  "flagged", "cancelled"};
constexpr const char* kFailureKinds[] = {
    "",         "victim", "victim_start", "antagonist_start", "agent_lost", "controller_restart",
    "cancelled"};
constexpr const char* kFlagCodes[] = {"unknown",         "missed_target",      "did_not_settle",
                                      "too_few_samples", "metric_looks_wrong", "neighbour_ended"};
}  // namespace

const char* ToString(ExperimentState s) { return kExperimentStates[static_cast<int>(s)]; }
const char* ToString(TrialState s) { return kTrialStates[static_cast<int>(s)]; }

std::string_view SubmitterName(std::string_view submitter) {
  const size_t slash = submitter.find('/');
  return slash == std::string_view::npos ? std::string_view() : submitter.substr(slash + 1);
}

bool SameSubmitter(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  const std::string_view na = SubmitterName(a), nb = SubmitterName(b);
  return !na.empty() && !nb.empty() ? na == nb : a == b;
}

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

const char* ToString(FailureKind k) { return kFailureKinds[static_cast<int>(k)]; }

bool ParseFailureKind(const std::string& s, FailureKind* out) {
  for (int i = 0; i < static_cast<int>(std::size(kFailureKinds)); ++i) {
    if (s == kFailureKinds[i]) {
      *out = static_cast<FailureKind>(i);
      return true;
    }
  }
  return false;
}

const char* FailureDescription(FailureKind k) {
  switch (k) {
    case FailureKind::kVictimStart: return "the victim could not start";
    case FailureKind::kAntagonistStart: return "an antagonist did not start or died";
    case FailureKind::kAgentLost: return "an agent was lost";
    case FailureKind::kControllerRestart: return "cut off by a controller restart";
    case FailureKind::kCancelled: return "cancelled";
    default: return "the victim failed";
  }
}

AttemptRecord AttemptOf(const TrialRecord& t, FailureKind why) {
  return {t.index, t.attempt,     t.state,           why,
          t.error, t.victim_node, t.started_unix_ms, t.finished_unix_ms};
}

std::string FailureKindNames() {
  std::string out;
  // kNone and kCancelled are not failures a policy retries.
  for (int i = 1; i + 1 < static_cast<int>(std::size(kFailureKinds)); ++i)
    out += (out.empty() ? "" : ", ") + std::string(kFailureKinds[i]);
  return out;
}

const char* ToString(FlagCode c) { return kFlagCodes[static_cast<int>(c)]; }

FlagCode ParseFlagCode(const std::string& s) {
  for (int i = 0; i < static_cast<int>(std::size(kFlagCodes)); ++i) {
    if (s == kFlagCodes[i]) return static_cast<FlagCode>(i);
  }
  return FlagCode::kUnknown;
}

std::string JoinFlagReasons(const std::vector<FlagReason>& reasons) {
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : "; ") + r.detail;
  return out;
}

namespace {

std::string LastLine(const std::string& text) {
  const size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  const size_t newline = text.find_last_of("\r\n", end);
  const size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

constexpr size_t kQuotedLineBytes = 240;

}  // namespace

std::string FailureWithStderr(const std::string& error, const std::string& stderr_tail) {
  std::string line = LastLine(stderr_tail);
  if (line.size() > kQuotedLineBytes) line = "..." + Utf8Tail(line, kQuotedLineBytes);
  line = TerminalSafe(line);
  if (line.empty() || error.find(line) != std::string::npos) return error;
  return error.empty() ? line : error + ": " + line;
}

std::string FailureHint(const std::string& stderr_tail) {
  const std::string& s = stderr_tail;
  auto has = [&s](const char* what) { return s.find(what) != std::string::npos; };
  const std::string who =
      "the victim runs as the agent's victim_user (nobody under a root agent) with the agent's "
      "environment";
  if (has("ModuleNotFoundError") || has("No module named")) {
    return "a Python module is missing for the victim's interpreter: " + who +
           "; use /usr/bin/python3 (Debian's, with python3-torch) or set victim.env";
  }
  if (has("Permission denied")) {
    return "permission denied: " + who + "; make the files it reads readable by that user";
  }
  if (has("not found") || has("No such file or directory")) {  // "command not found" too
    return "a command or file was not found: " + who +
           " and PATH; give full paths in "
           "victim.command";
  }
  return "";
}

void RestoreFlagReasons(TrialRecord* t) {
  if (t->state != TrialState::kFlagged || !t->flag_reasons.empty() || t->error.empty()) return;
  t->flag_reasons.push_back({FlagCode::kUnknown, t->error});
}

int64_t DiskReadBytes(const NodeTelemetry& t) {
  int64_t sum = 0;
  for (const DiskTelemetry& d : t.disks) sum += d.read_bytes;
  return sum;
}
int64_t DiskWriteBytes(const NodeTelemetry& t) {
  int64_t sum = 0;
  for (const DiskTelemetry& d : t.disks) sum += d.write_bytes;
  return sum;
}
int64_t NetRxBytes(const NodeTelemetry& t) {
  int64_t sum = 0;
  for (const NicTelemetry& n : t.nics) sum += n.rx_bytes;
  return sum;
}
int64_t NetTxBytes(const NodeTelemetry& t) {
  int64_t sum = 0;
  for (const NicTelemetry& n : t.nics) sum += n.tx_bytes;
  return sum;
}

}  // namespace codl
