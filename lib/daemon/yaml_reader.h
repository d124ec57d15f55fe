// Daemon-config value kinds (addresses, paths, labels, TLS), on top of the shared strict reader
// lib/yaml/: every rejection is thrown carrying the YAML mark of the offending key or value, and
// ParseConfigText turns it into "FILE:LINE:COL: path: message" (1-based), the same shape as
// experiment-file errors. Bools, numbers and durations are lib/yaml/typed.h's, so a value means
// the same in a config file as in an experiment file. Internal to lib/daemon/.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/result.h"
#include "lib/daemon/daemon_config.h"
#include "lib/yaml/typed.h"
#include "lib/yaml/yaml_reader.h"

namespace codl::daemon::internal {

// The shared strict reader (lib/yaml/): errors, marks, MapReader, typed values.
using ConfigError = yaml::YamlError;
using yaml::Fail;
using yaml::MapReader;

// `path` names the field in messages ("tls.cert", "labels.rack").
std::string FilePath(const YAML::Node& n, const std::string& path);      // non-empty, no NUL
std::string AbsolutePath(const YAML::Node& n, const std::string& path);  // starts with '/'
// "host:port", "[v6]:port" or "unix:/path"; port in [min_port, 65535].
std::string Address(const YAML::Node& n, const std::string& path, int min_port);
std::map<std::string, std::string> Labels(const YAML::Node& n, const std::string& path);
std::vector<std::string> AbsolutePathList(const YAML::Node& n, const std::string& path);
TlsPaths Tls(const YAML::Node& n, const std::string& path);

// Parses `text` as one YAML document (empty or comment-only: an empty mapping) and runs `read`
// on its root; ConfigError and YAML syntax errors become "FILE:LINE:COL: message".
Status ParseConfigText(const std::string& text, const std::string& filename,
                       const std::function<void(const YAML::Node& root)>& read);

}  // namespace codl::daemon::internal
