// The end of every unary handler, written once: the body runs — on `executor` when it blocks
// (the callback API forbids blocking a gRPC thread), else inline — under Guarded (status.h), and
// its status finishes the call. An exception in a body (an allocation that fails for a hostile
// request) fails that call with RESOURCE_EXHAUSTED or INTERNAL; the daemon keeps serving.
#pragma once

#include <utility>

#include <grpcpp/grpcpp.h>

#include "lib/common/executor.h"
#include "lib/rpc/status.h"

namespace codl::rpc {

// `body`: () -> grpc::Status. `executor`: null to run it inline.
template <typename Body>
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* ctx, const char* what,
                                      Executor* executor, Body body) {
  auto* r = ctx->DefaultReactor();
  auto run = [r, what, body = std::move(body)]() mutable { r->Finish(Guarded(what, body)); };
  if (executor != nullptr) {
    executor->Post(std::move(run));
  } else {
    run();
  }
  return r;
}

}  // namespace codl::rpc
