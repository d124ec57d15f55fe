#include "lib/yaml/typed.h"

#include <charconv>
#include <cmath>

#include "lib/common/units.h"

namespace codl::yaml {
namespace {

// "expected <what>, got '<text>'": the scalar was plain but is not a <what>.
[[noreturn]] void FailScalar(const YAML::Node& n, const std::string& path, const char* what) {
  Fail(n, path, std::string("expected ") + what + ", got '" + n.Scalar() + "'");
}

// The scalar text of a value that must be written plain (not quoted).
std::string PlainScalar(const YAML::Node& n, const std::string& path, const char* what) {
  std::string s = ScalarOf(n, path, what);
  RejectQuoted(n, path, what);
  return s;
}

template <class Int>
bool ParseWhole(const std::string& s, Int* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

bool IsQuoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

void RejectQuoted(const YAML::Node& n, const std::string& path, const char* what) {
  if (IsQuoted(n)) {
    Fail(n, path,
         std::string("expected ") + what + ", got the string \"" + n.Scalar() +
             "\" (quoted values are strings: drop the quotes)");
  }
}

std::string String(const YAML::Node& n, const std::string& path) {
  return ScalarOf(n, path, "a string");
}

std::string NonEmptyString(const YAML::Node& n, const std::string& path) {
  std::string s = String(n, path);
  if (s.empty()) Fail(n, path, "must not be empty");
  return s;
}

bool Bool(const YAML::Node& n, const std::string& path) {
  const char* what = "true or false";
  PlainScalar(n, path, what);
  bool v = false;
  if (!YAML::convert<bool>::decode(n, v)) FailScalar(n, path, what);
  return v;
}

int64_t Integer(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) {
  const char* what = "an integer";
  std::string s = PlainScalar(n, path, what);
  int64_t v = 0;
  if (!ParseWhole(s, &v)) FailScalar(n, path, what);
  if (v < lo || v > hi) {
    Fail(n, path, s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

uint64_t Unsigned64(const YAML::Node& n, const std::string& path) {
  const char* what = "an unsigned 64-bit integer";
  std::string s = PlainScalar(n, path, what);
  uint64_t v = 0;
  if (!ParseWhole(s, &v)) FailScalar(n, path, what);
  return v;
}

double Number(const YAML::Node& n, const std::string& path) {
  const char* what = "a number";
  std::string s = PlainScalar(n, path, what);
  double v = 0;
  // from_chars takes no leading '+', no hex and no YAML 1.1 forms; "inf"/"nan" fail isfinite.
  if (!ParseWhole(s, &v) || !std::isfinite(v)) FailScalar(n, path, what);
  return v;
}

double Duration(const YAML::Node& n, const std::string& path, bool positive) {
  std::string s = ScalarOf(n, path, "a duration (e.g. 30s)");
  Result<double> d = ParseDuration(s);
  if (!d.ok()) Fail(n, path, d.error());
  if (positive && *d <= 0) Fail(n, path, "'" + s + "' must be greater than 0");
  // Durations become int64 nanoseconds and deadlines downstream: bounded well before overflow.
  constexpr double kMaxDurationS = 1e7;  // about 115 days
  if (*d > kMaxDurationS) Fail(n, path, "'" + s + "' is longer than the limit of 1e7 s (115 days)");
  return *d;
}

uint64_t Size(const YAML::Node& n, const std::string& path) {
  std::string s = ScalarOf(n, path, "a size (e.g. 4KiB)");
  Result<uint64_t> v = ParseSize(s);
  if (!v.ok()) Fail(n, path, v.error());
  return *v;
}

const YAML::Node& List(const YAML::Node& n, const std::string& path, const char* what) {
  if (!n.IsSequence()) Fail(n, path, std::string("expected ") + what + ", got " + KindName(n));
  return n;
}

std::vector<std::string> StringList(const YAML::Node& n, const std::string& path,
                                    const char* what) {
  std::vector<std::string> out;
  for (size_t i = 0; i < List(n, path, what).size(); ++i)
    out.push_back(String(n[i], Index(path, i)));
  return out;
}

std::map<std::string, std::string> StringMap(const YAML::Node& n, const std::string& path,
                                             const char* what, const KeyCheck& check_key) {
  if (!n.IsMap()) Fail(n, path, std::string("expected ") + what + ", got " + KindName(n));
  std::map<std::string, std::string> out;
  for (const auto& kv : n) {
    const YAML::Node& key = kv.first;
    std::string k = NonEmptyString(key, path);
    if (check_key) {
      if (std::string why = check_key(k); !why.empty()) Fail(key, path, why);
    }
    if (out.count(k)) Fail(key, path, "duplicate key '" + k + "'");
    out[k] = String(kv.second, Join(path, k));
  }
  return out;
}

}  // namespace codl::yaml
