#include "lib/rpc/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace codl::rpc {
namespace {

using ::testing::HasSubstr;

Result<int> Lookup(bool found) {
  if (!found) return NotFound("no experiment 'x'");
  return 7;
}

Result<std::string> Describe(bool found) {
  auto r = Lookup(found);
  if (!r.ok()) return r.status();  // passes the failure on with its code
  return std::to_string(*r);
}

TEST(StatusCodes, HelpersCarryTheirCodeAndMessage) {
  struct Case {
    Status s;
    StatusCode code;
    const char* name;
  };
  const std::vector<Case> cases = {
      {InvalidArgument("m"), StatusCode::kInvalidArgument, "invalid-argument"},
      {NotFound("m"), StatusCode::kNotFound, "not-found"},
      {AlreadyExists("m"), StatusCode::kAlreadyExists, "already-exists"},
      {FailedPrecondition("m"), StatusCode::kFailedPrecondition, "failed-precondition"},
      {Unavailable("m"), StatusCode::kUnavailable, "unavailable"},
      {PermissionDenied("m"), StatusCode::kPermissionDenied, "permission-denied"},
      {Unauthenticated("m"), StatusCode::kUnauthenticated, "unauthenticated"},
      {DeadlineExceeded("m"), StatusCode::kDeadlineExceeded, "deadline-exceeded"},
      {ResourceExhausted("m"), StatusCode::kResourceExhausted, "resource-exhausted"},
      {Cancelled("m"), StatusCode::kCancelled, "cancelled"},
      {Internal("m"), StatusCode::kInternal, "internal"},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(c.s.ok()) << c.name;
    EXPECT_EQ(c.s.code(), c.code) << c.name;
    EXPECT_STREQ(StatusCodeName(c.s.code()), c.name);
    EXPECT_EQ(c.s.message(), "m");
    EXPECT_EQ(c.s.error(), "m");
  }
}

TEST(StatusCodes, ErrIsUnknownAndOkIsOk) {
  Status e = Err("something broke");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.code(), StatusCode::kUnknown);
  EXPECT_EQ(e.error(), "something broke");
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().code(), StatusCode::kOk);
  EXPECT_EQ(Status::Ok().error(), "");
}

TEST(StatusCodes, AnErrorWithCodeOkIsNotSuccess) {
  Status s = Error{"odd", StatusCode::kOk};
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnknown);
}

TEST(StatusCodes, ResultPassesTheCodeOn) {
  auto bad = Describe(false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.error(), "no experiment 'x'");
  auto good = Describe(true);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, "7");
  EXPECT_TRUE(good.status().ok());
}

TEST(StatusCodes, ResultFromAnOkStatusIsAnInternalError) {
  Result<int> r = Status::Ok();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.code(), StatusCode::kInternal);
}

TEST(StatusConversion, EveryCodeSurvivesTheRoundTrip) {
  for (int i = static_cast<int>(StatusCode::kCancelled);
       i <= static_cast<int>(StatusCode::kUnauthenticated); ++i) {
    const auto code = static_cast<StatusCode>(i);
    Status back = FromGrpc(ToGrpc(Error{"msg", code}));
    EXPECT_EQ(back.code(), code) << StatusCodeName(code);
    EXPECT_EQ(back.message(), "msg");
  }
}

TEST(StatusConversion, MapsToTheCanonicalGrpcCodes) {
  EXPECT_EQ(ToGrpc(InvalidArgument("a")).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpc(NotFound("a")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpc(FailedPrecondition("a")).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(ToGrpc(Unavailable("a")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpc(Unauthenticated("a")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ToGrpc(Err("a")).error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpc(NotFound("no experiment 'x'")).error_message(), "no experiment 'x'");
  EXPECT_TRUE(ToGrpc(Status::Ok()).ok());
}

TEST(StatusConversion, UnclassifiedUsesTheHandlersCodeButNeverOverridesAClassifiedOne) {
  EXPECT_EQ(ToGrpc(Err("gone"), StatusCode::kNotFound).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpc(Unavailable("busy"), StatusCode::kNotFound).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(ToGrpc(Status::Ok(), StatusCode::kNotFound).ok());
  // A fallback of "ok" cannot turn a failure into a success.
  EXPECT_EQ(ToGrpc(Err("x"), StatusCode::kOk).error_code(), grpc::StatusCode::UNKNOWN);
}

TEST(StatusConversion, FromGrpcKeepsTheMessageOrNamesTheCall) {
  grpc::Status g(grpc::StatusCode::DEADLINE_EXCEEDED, "too slow");
  EXPECT_EQ(FromGrpc(g).message(), "too slow");
  Status named = FromGrpc(g, "agent a1 Calibrate");
  EXPECT_EQ(named.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(named.message(), "agent a1 Calibrate: deadline exceeded: too slow");
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::UNAVAILABLE, ""), "x").message(),
            "x: unavailable");
  EXPECT_TRUE(FromGrpc(grpc::Status::OK, "x").ok());
}

TEST(StatusConversion, AnUnlistedGrpcCodeIsUnknown) {
  // 20: not one of gRPC's codes, yet inside the enum's range (0..31 for its largest value 16).
  // 99 was outside it, so merely holding it was undefined behaviour (UBSan in scripts/sanitize.sh).
  grpc::Status g(static_cast<grpc::StatusCode>(20), "future");
  EXPECT_EQ(FromGrpc(g).code(), StatusCode::kUnknown);
  EXPECT_THAT(FromGrpc(g, "call").message(), HasSubstr("unknown: future"));
}

}  // namespace
}  // namespace codl::rpc
