// Result<T>: a value or an error; Status: the same without a value. An error is a code (what kind
// of failure, so that callers branch on it instead of on message text) plus a human-readable
// message. std-only on purpose: common/ is shared with codl-inject and codl-victim, which must
// build on a bare CUDA box without Abseil. The conversion to and from grpc::Status lives in one
// place, lib/rpc/status.cc.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace codl {

// The kinds of failure. Same names and meanings as the canonical gRPC codes, so that the edge
// conversion loses nothing.
enum class StatusCode {
  kOk,
  kCancelled,        // the caller (or a signal) asked to stop
  kUnknown,          // not classified by whoever produced it: what Err("...") gives
  kInvalidArgument,  // bad input: YAML, flags, options; fixing the input fixes it
  kDeadlineExceeded,
  kNotFound,  // no such experiment / antagonist / file
  kAlreadyExists,
  kPermissionDenied,  // refused by policy (e.g. an agent's max_level)
  kResourceExhausted,
  kFailedPrecondition,  // the system is not in a state to do it (e.g. no live agent)
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kInternal,     // a bug or a broken invariant on our side
  kUnavailable,  // a peer cannot be reached; retrying may help
  kDataLoss,
  kUnauthenticated,  // missing or wrong credentials (bearer token)
};

// "ok", "invalid-argument", "not-found", ... (stable: used in logs and tests).
inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kUnknown: return "unknown";
    case StatusCode::kInvalidArgument: return "invalid-argument";
    case StatusCode::kDeadlineExceeded: return "deadline-exceeded";
    case StatusCode::kNotFound: return "not-found";
    case StatusCode::kAlreadyExists: return "already-exists";
    case StatusCode::kPermissionDenied: return "permission-denied";
    case StatusCode::kResourceExhausted: return "resource-exhausted";
    case StatusCode::kFailedPrecondition: return "failed-precondition";
    case StatusCode::kAborted: return "aborted";
    case StatusCode::kOutOfRange: return "out-of-range";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kInternal: return "internal";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kDataLoss: return "data-loss";
    case StatusCode::kUnauthenticated: return "unauthenticated";
  }
  return "unknown";
}

// The inverse of StatusCodeName; a name it does not know is kUnknown.
inline StatusCode StatusCodeFromName(std::string_view name) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kUnauthenticated); ++c) {
    if (name == StatusCodeName(static_cast<StatusCode>(c))) return static_cast<StatusCode>(c);
  }
  return StatusCode::kUnknown;
}

// "prefix: message"; either may be empty, and then no separator is added.
inline std::string JoinContext(std::string_view prefix, const std::string& message) {
  if (prefix.empty()) return message;
  if (message.empty()) return std::string(prefix);
  std::string s;
  s.reserve(prefix.size() + 2 + message.size());
  s.append(prefix).append(": ").append(message);
  return s;
}

// What a failing function returns; converts implicitly to any Result<T> or Status.
struct Error {
  std::string message;
  StatusCode code = StatusCode::kUnknown;

  // The same kind of failure, said from further out: "prefix: message", code unchanged.
  Error WithContext(std::string_view prefix) const { return {JoinContext(prefix, message), code}; }
};

// An error whose kind the producer does not state: code kUnknown (gRPC UNKNOWN; codlctl treats
// it as a runtime failure, exit 1). Prefer the named helpers below where the kind is known.
inline Error Err(std::string message) { return Error{std::move(message), StatusCode::kUnknown}; }
inline Error InvalidArgument(std::string m) { return {std::move(m), StatusCode::kInvalidArgument}; }
inline Error NotFound(std::string m) { return {std::move(m), StatusCode::kNotFound}; }
inline Error AlreadyExists(std::string m) { return {std::move(m), StatusCode::kAlreadyExists}; }
inline Error FailedPrecondition(std::string m) {
  return {std::move(m), StatusCode::kFailedPrecondition};
}
inline Error Unavailable(std::string m) { return {std::move(m), StatusCode::kUnavailable}; }
inline Error PermissionDenied(std::string m) {
  return {std::move(m), StatusCode::kPermissionDenied};
}
inline Error Unauthenticated(std::string m) { return {std::move(m), StatusCode::kUnauthenticated}; }
inline Error DeadlineExceeded(std::string m) {
  return {std::move(m), StatusCode::kDeadlineExceeded};
}
inline Error ResourceExhausted(std::string m) {
  return {std::move(m), StatusCode::kResourceExhausted};
}
inline Error Cancelled(std::string m) { return {std::move(m), StatusCode::kCancelled}; }
inline Error Internal(std::string m) { return {std::move(m), StatusCode::kInternal}; }

// Result<void> equivalent: ok, or a code and a message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  // An Error never means success: a stray kOk code is read as kUnknown.
  Status(Error error)  // NOLINT: implicit by design (`return Err("...")`)
      : message_(std::move(error.message)),
        code_(error.code == StatusCode::kOk ? StatusCode::kUnknown : error.code) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& error() const { return message_; }  // the message; "" when ok

  // Adds where the failure happened without changing what kind it is: "prefix: message", same
  // code (`Err(prefix + ": " + s.error())` would make it kUnknown). An ok Status stays ok.
  Status WithContext(std::string_view prefix) const& {
    return ok() ? Status() : Status(Error{JoinContext(prefix, message_), code_});
  }
  Status WithContext(std::string_view prefix) && {
    if (!ok()) message_ = JoinContext(prefix, message_);
    return std::move(*this);
  }

 private:
  std::string message_;
  StatusCode code_ = StatusCode::kOk;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}       // NOLINT: implicit by design
  Result(Error error) : status_(std::move(error)) {}  // NOLINT
  // Passes another call's failure on with its code: `if (!r.ok()) return r.status();`.
  Result(Status failed)  // NOLINT
      : status_(failed.ok() ? Status(Internal("a Result was built from an ok Status"))
                            : std::move(failed)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  StatusCode code() const { return status_.code(); }
  const std::string& error() const { return status_.message(); }

  // As Status::WithContext; a value passes through untouched.
  Result WithContext(std::string_view prefix) const& {
    if (ok()) return *this;
    return Result(status_.WithContext(prefix));
  }
  Result WithContext(std::string_view prefix) && {
    if (!ok()) status_ = std::move(status_).WithContext(prefix);
    return std::move(*this);
  }

  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T& value() & {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

namespace internal {
inline const Status& StatusOf(const Status& s) { return s; }
inline Status StatusOf(Status&& s) { return std::move(s); }
template <class T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace codl

#define CODL_CONCAT_INNER_(a, b) a##b
#define CODL_CONCAT_(a, b) CODL_CONCAT_INNER_(a, b)

// Returns from the enclosing function (returning Status or any Result<U>) when `expr`, a Status
// or a Result<T>, failed; its code and message pass on unchanged. Add context with
// `CODL_RETURN_IF_ERROR(Load(path).WithContext(path))`.
#define CODL_RETURN_IF_ERROR(expr)                                                            \
  do {                                                                                        \
    if (::codl::Status codl_status_ = ::codl::internal::StatusOf(expr); !codl_status_.ok()) { \
      return codl_status_;                                                                    \
    }                                                                                         \
  } while (false)

// `CODL_ASSIGN_OR_RETURN(auto rows, ReadRows(db));` : declares (or assigns) `lhs` from the
// value of the Result `expr`, or returns its failure as CODL_RETURN_IF_ERROR does.
#define CODL_ASSIGN_OR_RETURN(lhs, expr) \
  CODL_ASSIGN_OR_RETURN_IMPL_(CODL_CONCAT_(codl_result_, __LINE__), lhs, expr)
#define CODL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
