// ControllerClient: codlctl's side of the controller service. Synchronous calls, each with a
// deadline; proto types do not leave this file pair except the plain status/agent messages.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codl/v1/controller.grpc.pb.h"
#include "lib/common/records.h"
#include "lib/common/result.h"
#include "lib/rpc/rpc_util.h"

namespace codl::cli {

class ControllerClient {
 public:
  static Result<std::unique_ptr<ControllerClient>> Connect(const rpc::Endpoint& endpoint);

  Result<v1::SubmitExperimentReply> Submit(const std::string& yaml, const std::string& source_path);
  Result<v1::ExperimentStatus> GetStatus(const std::string& id);
  // Blocks, calling on_event for every event until the experiment ends or the stream breaks.
  Status Watch(const std::string& id,
               const std::function<void(const v1::ExperimentEvent&)>& on_event);
  Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> GetResults(const std::string& id);
  // The trace kept with trial `index` (0-based); reply.found() false when it has none.
  Result<v1::GetTrialTraceReply> GetTrialTrace(const std::string& id, int index);
  Result<std::vector<v1::AgentInfo>> ListAgents();
  Result<std::string> Cancel(const std::string& id);
  Result<v1::ResumeExperimentReply> Resume(const std::string& id, bool retry_failed = false);
  Result<v1::CalibrateNodeReply> Calibrate(const std::string& agent_id, const std::string& injector,
                                           const std::map<std::string, std::string>& options,
                                           double duration_s);
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  std::unique_ptr<v1::Controller::Stub> stub_;
};

// codlctl's exit status for a failure, from its code alone (never its text): 2 (bad input) for
// invalid-argument, not-found, already-exists, out-of-range, unauthenticated and
// permission-denied — fixing the input, flags or token fixes them; 1 for every other failure;
// 0 for ok.
int ExitCodeFor(const Status& s);
// For an experiment that ended: 0 when done; a failed one by the code it failed with (3 when an
// agent was unreachable, as for a call that could not reach the controller); 1 otherwise,
// including a failure from a controller that sends no code.
int ExitCodeFor(const v1::ExperimentStatus& s);

// The controller to talk to: --controller, else $CODL_CONTROLLER, else "" (none configured).
std::string ConfiguredController(const std::string& flag);

}  // namespace codl::cli
