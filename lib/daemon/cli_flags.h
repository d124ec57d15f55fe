// Command-line glue shared by codl-agent and codl-controller: --config, duration flags, and the
// rule "file values first, then every flag given on the command line overrides".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/common/result.h"

namespace codl::daemon {

// Adds --config FILE to `app`; `default_path` is read when it exists and --config is absent.
CLI::Option* AddConfigFlag(CLI::App& app, std::string* path, const std::string& default_path);

// For a double option holding seconds: accepts "10s", "500ms", "2m" (common/units.h) and
// rejects values <= 0.
CLI::Validator DurationFlag(bool allow_zero = false);  // allow_zero: "0" means off

// Copies a config-file value into `field` unless `flag` was given on the command line.
template <class T, class U>
void FromFileUnlessFlag(const CLI::App& app, const char* flag, const std::optional<U>& file_value,
                        T& field) {
  if (file_value && app.count(flag) == 0) field = *file_value;
}

// "KEY=VALUE" flags merged over the file's labels (a flag wins for its key).
Result<std::map<std::string, std::string>> MergeLabels(
    std::map<std::string, std::string> file_labels, const std::vector<std::string>& flags);

// The bearer token a daemon presents as a client: --token-file, else the config file's
// token_file; "" when none is configured. Never from the command line or the environment (both
// are readable by other local users: ps, /proc/PID/environ of children).
Result<std::string> ResolveToken(const std::string& token_file_flag,
                                 const std::optional<std::string>& config_token_file);

}  // namespace codl::daemon
