// Strict readers for daemon config files, on top of yamlio/: every rejection is thrown carrying
// the YAML mark of the offending key or value, and ParseConfigText turns it into
// "FILE:LINE:COL: path: message" (1-based), the same shape as experiment-file errors.
// Internal to config/: agent_config.cc and controller_config.cc use it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/result.h"
#include "lib/yaml/yaml_reader.h"
#include "lib/daemon/daemon_config.h"

namespace codl::daemon::internal {

// The shared strict reader (yamlio/): errors, marks, MapReader.
using ConfigError = yaml::YamlError;
using yaml::Fail;
using yaml::MapReader;

// Typed values. `path` names the field in messages ("tls.cert", "labels.rack").
std::string String(const YAML::Node& n, const std::string& path);        // non-empty scalar
std::string FilePath(const YAML::Node& n, const std::string& path);      // non-empty, no NUL
std::string AbsolutePath(const YAML::Node& n, const std::string& path);  // starts with '/'
// "host:port", "[v6]:port" or "unix:/path"; port in [min_port, 65535].
std::string Address(const YAML::Node& n, const std::string& path, int min_port);
bool Bool(const YAML::Node& n, const std::string& path);  // true/false (YAML 1.1 yes/no/on/off too)
double Number(const YAML::Node& n, const std::string& path);
double Duration(const YAML::Node& n, const std::string& path);  // "10s", "500ms", 2 (s); > 0
std::map<std::string, std::string> Labels(const YAML::Node& n, const std::string& path);
std::vector<std::string> AbsolutePathList(const YAML::Node& n, const std::string& path);
TlsPaths Tls(const YAML::Node& n, const std::string& path);

// Parses `text` as one YAML document (empty or comment-only: an empty mapping) and runs `read`
// on its root; ConfigError and YAML syntax errors become "FILE:LINE:COL: message".
Status ParseConfigText(const std::string& text, const std::string& filename,
                       const std::function<void(const YAML::Node& root)>& read);

}  // namespace codl::daemon::internal
