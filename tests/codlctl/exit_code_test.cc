// codlctl's exit status comes from an error's code (as it crossed gRPC), never from its text.
#include <gtest/gtest.h>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "lib/rpc/status.h"

namespace codl::cli {
namespace {

// What codlctl sees: the controller's error after the trip through gRPC.
Status OverTheWire(const Status& s) { return rpc::FromGrpc(rpc::ToGrpc(s)); }

TEST(ExitCodeFor, BadInputIsTwo) {
  EXPECT_EQ(ExitCodeFor(OverTheWire(NotFound("no experiment 'x' in db"))), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(OverTheWire(InvalidArgument("e.yaml:3:1: bad"))), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(OverTheWire(AlreadyExists("x"))), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(OverTheWire(Unauthenticated("wrong token"))), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(OverTheWire(PermissionDenied("policy"))), kExitBadInput);
}

TEST(ExitCodeFor, RuntimeFailuresAreOne) {
  EXPECT_EQ(ExitCodeFor(OverTheWire(Internal("bug"))), kExitFailed);
  EXPECT_EQ(ExitCodeFor(OverTheWire(FailedPrecondition("no live agent"))), kExitFailed);
  EXPECT_EQ(ExitCodeFor(OverTheWire(DeadlineExceeded("slow"))), kExitFailed);
  EXPECT_EQ(ExitCodeFor(OverTheWire(Err("unclassified"))), kExitFailed);
}

TEST(ExitCodeFor, UnreachableIsThree) {
  // Distinct from a failed experiment: a script may retry, a failed experiment it must not.
  EXPECT_EQ(ExitCodeFor(OverTheWire(Unavailable("failed to connect to all addresses"))),
            kExitUnreachable);
  EXPECT_NE(kExitUnreachable, kExitFailed);
  EXPECT_NE(kExitUnreachable, kExitBadInput);
}

TEST(ExitCodeFor, TheTextDoesNotMatter) {
  // An unclassified error that merely mentions a missing experiment is still a runtime failure.
  EXPECT_EQ(ExitCodeFor(Err("no experiment 'x' in db")), kExitFailed);
  EXPECT_EQ(ExitCodeFor(Status::Ok()), kExitOk);
}

}  // namespace
}  // namespace codl::cli
