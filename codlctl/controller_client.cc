#include "codlctl/controller_client.h"

#include "codlctl/commands.h"
#include "lib/common/tunables.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/status.h"

namespace codl::cli {

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied: return kExitBadInput;
    case StatusCode::kUnavailable: return kExitUnreachable;
    default: return kExitFailed;
  }
}

int ExitCodeFor(const v1::ExperimentStatus& s) {
  if (auto state = rpc::StateOf(s); state.ok() && *state == ExperimentState::kDone) return kExitOk;
  // 0 (no code: an older controller, or a cancel) reads as kUnknown: 1.
  const StatusCode code = rpc::FromGrpcCode(static_cast<grpc::StatusCode>(s.error_code()));
  return ExitCodeFor(Status(Error{s.error(), code}));
}

std::string ConfiguredController(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = getenv("CODL_CONTROLLER");
  return env ? env : "";
}

Result<std::unique_ptr<ControllerClient>> ControllerClient::Connect(const rpc::Endpoint& endpoint) {
  auto ch = rpc::MakeChannel(endpoint);
  if (!ch.ok()) return ch.status();
  auto c = std::unique_ptr<ControllerClient>(new ControllerClient());
  c->address_ = endpoint.address;
  c->stub_ = v1::Controller::NewStub(*ch);
  return c;
}

namespace {
// Turns a failed call into a readable error; the code travels unchanged (ExitCodeFor reads it).
// (The reply is returned by the caller after the call: passing it here by value would copy it
// before the call fills it.)
Status Check(const grpc::Status& s, const std::string& what, const std::string& address) {
  Status st = rpc::FromGrpc(s);
  if (st.code() == StatusCode::kUnavailable) {
    return Unavailable(
        "cannot reach the controller at " + address + " (" + st.message() +
        "); is codl-controller running? (or use `codlctl run` for the embedded one)");
  }
  // Validation errors already name FILE:LINE:COL; pass them through verbatim.
  if (!st.ok() && st.message().empty()) return Error{what + " failed", st.code()};
  return st;
}

bool Unreachable(const grpc::Status& s) {
  return rpc::FromGrpc(s).code() == StatusCode::kUnavailable;
}

template <class T>
Result<T> Reply(const Status& s, T reply) {
  if (!s.ok()) return s;
  return reply;
}
}  // namespace

Result<v1::SubmitExperimentReply> ControllerClient::Submit(const std::string& yaml,
                                                           const std::string& source_path) {
  v1::SubmitExperimentRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  req.set_yaml(yaml);
  req.set_source_path(source_path);
  v1::SubmitExperimentReply reply;
  grpc::Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {  // same key: a retry cannot submit twice
    auto ctx = rpc::MakeContext(tunables::kCliSubmitDeadlineS);
    s = stub_->SubmitExperiment(ctx.get(), req, &reply);
    if (!Unreachable(s)) break;
  }
  return Reply(Check(s, "submit", address_), reply);
}

Result<v1::ExperimentStatus> ControllerClient::GetStatus(const std::string& id) {
  v1::GetExperimentRequest req;
  req.set_experiment_id(id);
  v1::ExperimentStatus reply;
  auto ctx = rpc::MakeContext(tunables::kCliCallDeadlineS);
  grpc::Status s = stub_->GetExperiment(ctx.get(), req, &reply);
  return Reply(Check(s, "status", address_), reply);
}

Status ControllerClient::Watch(const std::string& id,
                               const std::function<void(const v1::ExperimentEvent&)>& on_event) {
  v1::WatchExperimentRequest req;
  req.set_experiment_id(id);
  auto ctx = rpc::MakeContext(tunables::kCliWatchDeadlineS);
  auto reader = stub_->WatchExperiment(ctx.get(), req);
  v1::ExperimentEvent ev;
  while (reader->Read(&ev)) on_event(ev);
  return Check(reader->Finish(), "watch", address_);
}

Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> ControllerClient::GetResults(
    const std::string& id) {
  v1::GetResultsRequest req;
  req.set_experiment_id(id);
  v1::GetResultsReply reply;
  auto ctx = rpc::MakeContext(tunables::kCliResultsDeadlineS);
  grpc::Status gs = stub_->GetResults(ctx.get(), req, &reply);
  if (Status st = Check(gs, "results", address_); !st.ok()) return st;
  auto records = rpc::FromProto(reply);
  if (!records.ok()) return Internal("malformed results from the controller: " + records.error());
  return records;
}

Result<v1::GetTrialTraceReply> ControllerClient::GetTrialTrace(const std::string& id, int index) {
  v1::GetTrialTraceRequest req;
  req.set_experiment_id(id);
  req.set_trial_index(index);
  v1::GetTrialTraceReply reply;
  auto ctx = rpc::MakeContext(tunables::kCliResultsDeadlineS);
  grpc::Status gs = stub_->GetTrialTrace(ctx.get(), req, &reply);
  if (Status st = Check(gs, "trace", address_); !st.ok()) return st;
  return reply;
}

Result<std::vector<v1::AgentInfo>> ControllerClient::ListAgents() {
  v1::ListAgentsReply reply;
  auto ctx = rpc::MakeContext(tunables::kCliCallDeadlineS);
  grpc::Status gs = stub_->ListAgents(ctx.get(), v1::ListAgentsRequest(), &reply);
  if (Status st = Check(gs, "agents", address_); !st.ok()) return st;
  return std::vector<v1::AgentInfo>(reply.agents().begin(), reply.agents().end());
}

Result<std::string> ControllerClient::Cancel(const std::string& id) {
  v1::CancelExperimentRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  req.set_experiment_id(id);
  v1::CancelExperimentReply reply;
  auto ctx = rpc::MakeContext(tunables::kCliCallDeadlineS);
  grpc::Status gs = stub_->CancelExperiment(ctx.get(), req, &reply);
  if (Status st = Check(gs, "cancel", address_); !st.ok()) return st;
  return rpc::StateName(reply);
}

Result<v1::ResumeExperimentReply> ControllerClient::Resume(const std::string& id,
                                                           bool retry_failed) {
  v1::ResumeExperimentRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  req.set_experiment_id(id);
  req.set_retry_failed(retry_failed);
  v1::ResumeExperimentReply reply;
  auto ctx = rpc::MakeContext(tunables::kCliCallDeadlineS);
  grpc::Status gs = stub_->ResumeExperiment(ctx.get(), req, &reply);
  return Reply(Check(gs, "resume", address_), reply);
}

Result<v1::CalibrateNodeReply> ControllerClient::Calibrate(
    const std::string& agent_id, const std::string& injector,
    const std::map<std::string, std::string>& options, double duration_s) {
  v1::CalibrateNodeRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  req.set_agent_id(agent_id);
  req.set_injector(injector);
  for (const auto& [k, v] : options) (*req.mutable_options())[k] = v;
  req.set_duration_s(duration_s);
  v1::CalibrateNodeReply reply;
  auto ctx = rpc::MakeContext(tunables::CliCalibrateDeadlineS(duration_s));
  grpc::Status gs = stub_->CalibrateNode(ctx.get(), req, &reply);
  return Reply(Check(gs, "calibrate", address_), reply);
}

}  // namespace codl::cli
