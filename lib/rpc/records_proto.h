// The results model (lib/common/records.h) <-> its wire form (proto/codl/v1/results.proto): the
// one conversion, used by the controller to answer GetResults and by codlctl to read the reply.
#pragma once

#include <utility>
#include <vector>

#include "codl/v1/controller.pb.h"
#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::rpc {

v1::ExperimentRecord ToProto(const ExperimentRecord& e);
v1::TrialRecord ToProto(const TrialRecord& t);
void ToProto(const ExperimentRecord& e, const std::vector<TrialRecord>& trials,
             v1::GetResultsReply* reply);

// Fail (internal) on a state this build does not know: a record is never guessed.
// One victim step: in RunVictimReply, in live telemetry, in TrialRecord.
v1::VictimStep ToProto(const VictimStep& s);
VictimStep FromProto(const v1::VictimStep& p);

Result<ExperimentRecord> FromProto(const v1::ExperimentRecord& p);
Result<TrialRecord> FromProto(const v1::TrialRecord& p);
Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> FromProto(
    const v1::GetResultsReply& reply);

// The states one to one; an unspecified or unknown value is an error.
v1::ExperimentState ToProto(ExperimentState s);
v1::TrialState ToProto(TrialState s);
Result<ExperimentState> FromProto(v1::ExperimentState s);
Result<TrialState> FromProto(v1::TrialState s);

// Node telemetry (the agent's RunVictimReply, the trial record). FromProto keeps what came in
// within bounds, whatever the sender wrote: shares in [0, 1] (else NaN), bytes and counts >= 0,
// memory figures >= -1, at most kMaxTelemetryDevices disks, interfaces and GPUs (GPU
// percentages in [0, 100], else NaN).
inline constexpr int kMaxTelemetryDevices = 256;
v1::NodeTelemetry ToProto(const NodeTelemetry& t);
NodeTelemetry FromProto(const v1::NodeTelemetry& p);

// Flag reasons; a code this build does not know reads as FlagCode::kUnknown, its text kept.
v1::FlagReason ToProto(const FlagReason& r);
FlagReason FromProto(const v1::FlagReason& p);

// ExperimentStatus carries its state twice (docs/design.md, "Wire compatibility"): SetState
// fills both; StateOf reads the enum, or the name when a controller older than it sent none.
void SetState(ExperimentState state, v1::ExperimentStatus* s);
Result<ExperimentState> StateOf(const v1::ExperimentStatus& s);
// ToString(StateOf(s)), or the name as sent when it is not one this build knows.
std::string StateName(const v1::ExperimentStatus& s);
// What a cancel left: "cancelling" while the experiment is being stopped, else its state's name;
// from a controller older than `experiment_state`, the name it sent.
std::string StateName(const v1::CancelExperimentReply& r);

}  // namespace codl::rpc
