// codl::Status <-> grpc::Status: the one place where codes cross the wire. Handlers finish with
// ToGrpc(...) and clients read replies with FromGrpc(...); nothing else builds a grpc::Status or
// reads a code out of message text.
#pragma once

#include <functional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "lib/common/result.h"

namespace codl::rpc {

grpc::StatusCode ToGrpcCode(StatusCode code);
StatusCode FromGrpcCode(grpc::StatusCode code);

// codl::Status -> grpc::Status, message verbatim. `unclassified` is the code to send for an
// error its producer left kUnknown (plain Err("...")) when the handler knows what such a failure
// means for its call (e.g. a failed lookup is NOT_FOUND); classified codes are never overridden.
grpc::Status ToGrpc(const Status& s, StatusCode unclassified = StatusCode::kUnknown);

// grpc::Status -> codl::Status with the same code and the message verbatim (so that validation
// errors keep their FILE:LINE:COL).
Status FromGrpc(const grpc::Status& s);
// Same code; the message names the peer and the call: "WHAT: CODE: MESSAGE".
Status FromGrpc(const grpc::Status& s, const std::string& what);

// Runs a handler's body and returns its status. An exception it throws becomes a status rather
// than taking the daemon down: std::bad_alloc (a request whose work would not fit in memory)
// RESOURCE_EXHAUSTED, anything else INTERNAL, each naming `what` and logged. Every handler of
// the controller and the agent runs its body under it.
grpc::Status Guarded(const char* what, const std::function<grpc::Status()>& body);

}  // namespace codl::rpc
