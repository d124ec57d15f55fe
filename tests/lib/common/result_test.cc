// Status/Result: context can be added to a failure without losing its code, and the early-return
// macros pass failures on unchanged.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "lib/common/result.h"

namespace codl {
namespace {

TEST(WithContext, PrefixesTheMessageAndKeepsTheCode) {
  Status s = Unavailable("connection refused");
  Status c = s.WithContext("agent node-1 StartAntagonist");
  EXPECT_EQ(c.code(), StatusCode::kUnavailable);
  EXPECT_EQ(c.message(), "agent node-1 StartAntagonist: connection refused");
  EXPECT_EQ(s.message(), "connection refused") << "the const overload must not change its source";

  Status twice = NotFound("no such file").WithContext("reading x.yaml").WithContext("submit");
  EXPECT_EQ(twice.code(), StatusCode::kNotFound);
  EXPECT_EQ(twice.message(), "submit: reading x.yaml: no such file");
}

TEST(WithContext, OkStaysOk) {
  Status s = Status::Ok().WithContext("anything");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(WithContext, EmptyPartsAddNoSeparator) {
  EXPECT_EQ(Status(Internal("boom")).WithContext("").message(), "boom");
  EXPECT_EQ(Status(Internal("")).WithContext("where").message(), "where");
  EXPECT_EQ(Status(Internal("")).WithContext("where").code(), StatusCode::kInternal);
}

TEST(WithContext, OnAResultKeepsCodeOrValue) {
  Result<int> failed = PermissionDenied("max_level 0.5");
  Result<int> c = failed.WithContext("level 0.8");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.error(), "level 0.8: max_level 0.5");

  Result<int> value = 7;
  Result<int> v = value.WithContext("unused");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);

  // The rvalue overload moves: works for move-only values too.
  Result<std::unique_ptr<int>> owned = std::make_unique<int>(3);
  auto moved = std::move(owned).WithContext("unused");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(**moved, 3);
}

TEST(WithContext, OnAnError) {
  Error e = DeadlineExceeded("3 s").WithContext("GetAntagonist");
  EXPECT_EQ(e.code, StatusCode::kDeadlineExceeded);
  EXPECT_EQ(e.message, "GetAntagonist: 3 s");
}

TEST(WithContext, PassesThroughAResultOfAnotherType) {
  // The usual site: a Result<U> failure returned from a function returning Result<T>.
  auto parse = [](bool ok) -> Result<double> {
    if (!ok) return InvalidArgument("'x' is not a number");
    return 1.5;
  };
  auto load = [&](bool ok) -> Result<std::string> {
    auto n = parse(ok);
    if (!n.ok()) return n.status().WithContext("option 'rate'");
    return std::to_string(*n);
  };
  Result<std::string> r = load(false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.error(), "option 'rate': 'x' is not a number");
  EXPECT_TRUE(load(true).ok());
}

// Counts how far a function got, to show the macros return early exactly on failure.
struct Steps {
  int reached = 0;
};

Status Step(Steps* s, Status outcome) {
  ++s->reached;
  return outcome;
}

Status TwoSteps(Steps* s, Status first, Status second) {
  CODL_RETURN_IF_ERROR(Step(s, std::move(first)));
  CODL_RETURN_IF_ERROR(Step(s, std::move(second)).WithContext("second"));
  return Status::Ok();
}

TEST(ReturnIfError, ReturnsTheFirstFailureWithItsCode) {
  Steps s;
  Status r = TwoSteps(&s, Unavailable("down"), Status::Ok());
  EXPECT_EQ(r.code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.message(), "down");
  EXPECT_EQ(s.reached, 1) << "the second step ran after the first failed";

  Steps s2;
  r = TwoSteps(&s2, Status::Ok(), NotFound("gone"));
  EXPECT_EQ(r.code(), StatusCode::kNotFound);
  EXPECT_EQ(r.message(), "second: gone");
  EXPECT_EQ(s2.reached, 2);

  Steps s3;
  EXPECT_TRUE(TwoSteps(&s3, Status::Ok(), Status::Ok()).ok());
  EXPECT_EQ(s3.reached, 2);
}

Result<int> Half(int n) {
  if (n % 2 != 0) return InvalidArgument(std::to_string(n) + " is odd");
  return n / 2;
}

// A Result<T> through CODL_RETURN_IF_ERROR, from a function returning another Result.
Result<std::string> Check(int n) {
  CODL_RETURN_IF_ERROR(Half(n));
  return std::string("even");
}

TEST(ReturnIfError, TakesAResultAndReturnsIntoAnotherResult) {
  Result<std::string> odd = Check(3);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(odd.error(), "3 is odd");
  ASSERT_TRUE(Check(4).ok());
  EXPECT_EQ(*Check(4), "even");
}

Result<int> Quarter(int n, int* assigned) {
  CODL_ASSIGN_OR_RETURN(int half, Half(n));
  ++*assigned;
  CODL_ASSIGN_OR_RETURN(*assigned, Half(half).WithContext("half of " + std::to_string(half)));
  return *assigned;
}

TEST(AssignOrReturn, AssignsTheValueOrReturnsTheFailure) {
  int assigned = 0;
  Result<int> q = Quarter(8, &assigned);
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ(*q, 2);

  assigned = 0;
  q = Quarter(6, &assigned);  // 6 / 2 = 3, odd
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(q.error(), "half of 3: 3 is odd");
  EXPECT_EQ(assigned, 1) << "the first assignment ran, the second must not have";

  assigned = 0;
  q = Quarter(5, &assigned);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error(), "5 is odd");
  EXPECT_EQ(assigned, 0);
}

Result<std::unique_ptr<int>> Boxed(int n) { return std::make_unique<int>(n); }

Result<int> Unbox(int n) {
  CODL_ASSIGN_OR_RETURN(std::unique_ptr<int> p, Boxed(n));  // move-only values move out
  return *p;
}

TEST(AssignOrReturn, MovesMoveOnlyValues) {
  ASSERT_TRUE(Unbox(9).ok());
  EXPECT_EQ(*Unbox(9), 9);
}

TEST(StatusCodeFromName, InvertsStatusCodeName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kUnauthenticated); ++c) {
    const auto code = static_cast<StatusCode>(c);
    EXPECT_EQ(StatusCodeFromName(StatusCodeName(code)), code) << StatusCodeName(code);
  }
  EXPECT_EQ(StatusCodeFromName("no-such-code"), StatusCode::kUnknown);
}

}  // namespace
}  // namespace codl
