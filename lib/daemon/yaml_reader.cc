#include "lib/daemon/yaml_reader.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "lib/common/units.h"

namespace codl::daemon::internal {
namespace {

using yaml::KindName;

// Quoted scalars carry the non-specific tag "!": `"0.5"` is a string, not a number.
bool Quoted(const YAML::Node& n) { return n.Tag() == "!"; }

bool ValidPort(std::string_view s, int min_port) {
  int port = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  return ec == std::errc() && end == s.data() + s.size() && port >= min_port && port <= 65535;
}

}  // namespace

std::string String(const YAML::Node& n, const std::string& path) {
  std::string s = yaml::ScalarOf(n, path, "a string");
  if (s.empty()) Fail(n, path, "must not be empty");
  return s;
}

std::string FilePath(const YAML::Node& n, const std::string& path) {
  std::string s = String(n, path);
  if (s.find('\0') != std::string::npos) Fail(n, path, "a path may not contain NUL");
  return s;
}

std::string AbsolutePath(const YAML::Node& n, const std::string& path) {
  std::string s = FilePath(n, path);
  if (s[0] != '/') Fail(n, path, "'" + s + "' must be an absolute path");
  return s;
}

std::string Address(const YAML::Node& n, const std::string& path, int min_port) {
  std::string s = String(n, path);
  const std::string expect = " (expected host:port, [v6addr]:port or unix:/path)";
  if (s.rfind("unix:", 0) == 0) {
    if (s.size() == 5) Fail(n, path, "'" + s + "': empty socket path" + expect);
    return s;
  }
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) Fail(n, path, "'" + s + "' has no port" + expect);
  std::string host = s.substr(0, colon);
  if (host.front() == '[' ? host.back() != ']' || host.size() < 3
                          : host.find(':') != std::string::npos) {
    Fail(n, path, "'" + s + "': malformed host" + expect);
  }
  if (!ValidPort(std::string_view(s).substr(colon + 1), min_port)) {
    Fail(n, path, "'" + s + "': port must be an integer in [" + std::to_string(min_port) +
                      ", 65535]");
  }
  return s;
}

bool Bool(const YAML::Node& n, const std::string& path) {
  std::string s = yaml::ScalarOf(n, path, "true or false");
  bool v = false;
  if (Quoted(n) || !YAML::convert<bool>::decode(n, v)) {
    Fail(n, path, "expected true or false, got " + std::string(Quoted(n) ? "the string " : "") +
                      "'" + s + "'");
  }
  return v;
}

double Number(const YAML::Node& n, const std::string& path) {
  std::string s = yaml::ScalarOf(n, path, "a number");
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (Quoted(n) || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    Fail(n, path, "expected a number, got " + std::string(Quoted(n) ? "the string " : "") + "'" +
                      s + "'");
  }
  return v;
}

double Duration(const YAML::Node& n, const std::string& path) {
  std::string s = yaml::ScalarOf(n, path, "a duration (e.g. 10s, 500ms)");
  auto d = ParseDuration(s);
  if (!d.ok()) Fail(n, path, d.error());
  if (*d <= 0) Fail(n, path, "must be greater than 0");
  return *d;
}

std::map<std::string, std::string> Labels(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) Fail(n, path, std::string("expected a mapping of labels, got ") + KindName(n));
  std::map<std::string, std::string> labels;
  for (const auto& kv : n) {
    const YAML::Node& key = kv.first;
    std::string k = yaml::ScalarOf(key, path, "a label name");
    if (k.empty()) Fail(key, path, "label names must not be empty");
    for (char c : k) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
          c != '/') {
        Fail(key, path, "label name '" + k + "' may only contain letters, digits, '_', '-', '.', '/'");
      }
    }
    if (labels.count(k)) Fail(key, path, "duplicate label '" + k + "'");
    labels[k] = yaml::ScalarOf(kv.second, path + "." + k, "a string");
  }
  return labels;
}

std::vector<std::string> AbsolutePathList(const YAML::Node& n, const std::string& path) {
  if (!n.IsSequence()) Fail(n, path, std::string("expected a list of paths, got ") + KindName(n));
  if (n.size() == 0) Fail(n, path, "must name at least one directory");
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    out.push_back(AbsolutePath(n[i], path + "[" + std::to_string(i) + "]"));
  }
  return out;
}

TlsPaths Tls(const YAML::Node& n, const std::string& path) {
  MapReader m(n, path, {"ca", "cert", "key"});
  TlsPaths tls;
  for (auto [key, field] : {std::pair{"ca", &tls.ca}, {"cert", &tls.cert}, {"key", &tls.key}}) {
    if (!m.Has(key)) Fail(n, path, std::string("missing '") + key + "' (mTLS needs ca, cert and key)");
    *field = FilePath(m.Value(key), m.PathOf(key));
  }
  return tls;
}

Status ParseConfigText(const std::string& text, const std::string& filename,
                       const std::function<void(const YAML::Node& root)>& read) {
  auto where = [&](const YAML::Mark& m) {
    if (m.is_null()) return filename;
    return filename + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  };
  try {
    YAML::Node root = YAML::Load(text);
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    read(root);
  } catch (const ConfigError& e) {
    return Err(where(e.mark) + ": " + e.message);
  } catch (const YAML::Exception& e) {
    return Err(where(e.mark) + ": " + e.msg);
  }
  return Status::Ok();
}

}  // namespace codl::daemon::internal
