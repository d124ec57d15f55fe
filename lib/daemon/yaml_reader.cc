#include "lib/daemon/yaml_reader.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "lib/common/units.h"

namespace codl::daemon::internal {
namespace {

bool ValidPort(std::string_view s, int min_port) {
  int port = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  return ec == std::errc() && end == s.data() + s.size() && port >= min_port && port <= 65535;
}

}  // namespace

std::string FilePath(const YAML::Node& n, const std::string& path) {
  std::string s = yaml::NonEmptyString(n, path);
  if (s.find('\0') != std::string::npos) Fail(n, path, "a path may not contain NUL");
  return s;
}

std::string AbsolutePath(const YAML::Node& n, const std::string& path) {
  std::string s = FilePath(n, path);
  if (s[0] != '/') Fail(n, path, "'" + s + "' must be an absolute path");
  return s;
}

std::string Address(const YAML::Node& n, const std::string& path, int min_port) {
  std::string s = yaml::NonEmptyString(n, path);
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
    Fail(n, path,
         "'" + s + "': port must be an integer in [" + std::to_string(min_port) + ", 65535]");
  }
  return s;
}

std::map<std::string, std::string> Labels(const YAML::Node& n, const std::string& path) {
  return yaml::StringMap(n, path, "a mapping of labels", [](const std::string& k) {
    for (char c : k) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
          c != '/') {
        return "label name '" + k + "' may only contain letters, digits, '_', '-', '.', '/'";
      }
    }
    return std::string();
  });
}

std::vector<std::string> AbsolutePathList(const YAML::Node& n, const std::string& path) {
  if (yaml::List(n, path, "a list of paths").size() == 0)
    Fail(n, path, "must name at least one directory");
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
    if (!m.Has(key))
      Fail(n, path, std::string("missing '") + key + "' (mTLS needs ca, cert and key)");
    *field = FilePath(m.Value(key), m.PathOf(key));
  }
  return tls;
}

Status ParseConfigText(const std::string& text, const std::string& filename,
                       const std::function<void(const YAML::Node& root)>& read) {
  return yaml::ReadDocument(text, filename, [&](const YAML::Node& root) {
    // An empty or comment-only file sets nothing.
    read(root.IsNull() ? YAML::Node(YAML::NodeType::Map) : root);
  });
}

}  // namespace codl::daemon::internal
