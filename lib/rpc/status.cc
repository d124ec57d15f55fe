#include "lib/rpc/status.h"

#include <new>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace codl::rpc {

grpc::StatusCode ToGrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return grpc::StatusCode::OK;
    case StatusCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case StatusCode::kUnknown: return grpc::StatusCode::UNKNOWN;
    case StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case StatusCode::kPermissionDenied: return grpc::StatusCode::PERMISSION_DENIED;
    case StatusCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case StatusCode::kAborted: return grpc::StatusCode::ABORTED;
    case StatusCode::kOutOfRange: return grpc::StatusCode::OUT_OF_RANGE;
    case StatusCode::kUnimplemented: return grpc::StatusCode::UNIMPLEMENTED;
    case StatusCode::kInternal: return grpc::StatusCode::INTERNAL;
    case StatusCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kDataLoss: return grpc::StatusCode::DATA_LOSS;
    case StatusCode::kUnauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
  }
  return grpc::StatusCode::UNKNOWN;
}

StatusCode FromGrpcCode(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return StatusCode::kOk;
    case grpc::StatusCode::CANCELLED: return StatusCode::kCancelled;
    case grpc::StatusCode::UNKNOWN: return StatusCode::kUnknown;
    case grpc::StatusCode::INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return StatusCode::kDeadlineExceeded;
    case grpc::StatusCode::NOT_FOUND: return StatusCode::kNotFound;
    case grpc::StatusCode::ALREADY_EXISTS: return StatusCode::kAlreadyExists;
    case grpc::StatusCode::PERMISSION_DENIED: return StatusCode::kPermissionDenied;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return StatusCode::kResourceExhausted;
    case grpc::StatusCode::FAILED_PRECONDITION: return StatusCode::kFailedPrecondition;
    case grpc::StatusCode::ABORTED: return StatusCode::kAborted;
    case grpc::StatusCode::OUT_OF_RANGE: return StatusCode::kOutOfRange;
    case grpc::StatusCode::UNIMPLEMENTED: return StatusCode::kUnimplemented;
    case grpc::StatusCode::INTERNAL: return StatusCode::kInternal;
    case grpc::StatusCode::UNAVAILABLE: return StatusCode::kUnavailable;
    case grpc::StatusCode::DATA_LOSS: return StatusCode::kDataLoss;
    case grpc::StatusCode::UNAUTHENTICATED: return StatusCode::kUnauthenticated;
    default: return StatusCode::kUnknown;  // a code newer than this list
  }
}

grpc::Status ToGrpc(const Status& s, StatusCode unclassified) {
  if (s.ok()) return grpc::Status::OK;
  StatusCode code = s.code() == StatusCode::kUnknown ? unclassified : s.code();
  if (code == StatusCode::kOk) code = StatusCode::kUnknown;  // a failure never travels as OK
  return grpc::Status(ToGrpcCode(code), s.message());
}

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return Status::Ok();
  StatusCode code = FromGrpcCode(s.error_code());
  if (code == StatusCode::kOk) code = StatusCode::kUnknown;
  return Error{s.error_message(), code};
}

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  Status st = FromGrpc(s);
  if (st.ok()) return st;
  std::string name = StatusCodeName(st.code());
  for (char& c : name) c = c == '-' ? ' ' : c;  // "deadline exceeded" reads better in a sentence
  return Error{what + ": " + name + (st.message().empty() ? "" : ": " + st.message()), st.code()};
}

grpc::Status Guarded(const char* what, const std::function<grpc::Status()>& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    spdlog::error("{}: out of memory; the call failed and the daemon goes on", what);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        std::string(what) + ": the request needs more memory than is available");
  } catch (const std::exception& e) {
    spdlog::error("{}: {}; the call failed and the daemon goes on", what, e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(what) + ": " + e.what());
  }
}

}  // namespace codl::rpc
