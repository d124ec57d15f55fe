#include "lib/daemon/cli_flags.h"

#include "lib/common/units.h"
#include "lib/daemon/daemon_config.h"

namespace codl::daemon {

CLI::Option* AddConfigFlag(CLI::App& app, std::string* path, const std::string& default_path) {
  return app.add_option("--config", *path,
                        "YAML config file (default: " + default_path +
                            " when it exists); flags given on the command line override it");
}

CLI::Validator DurationFlag(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& value) -> std::string {
        auto d = ParseDuration(value);
        if (!d.ok()) return d.error();
        if (allow_zero && *d == 0) {
          value = "0";
          return "";
        }
        if (*d <= 0) return "'" + value + "' must be greater than 0";
        value = std::to_string(*d);
        return "";
      },
      "DURATION");
}

Result<std::map<std::string, std::string>> MergeLabels(std::map<std::string, std::string> labels,
                                                       const std::vector<std::string>& flags) {
  for (const auto& kv : flags) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return Err("--label '" + kv + "': expected KEY=VALUE");
    labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return labels;
}

Result<std::string> ResolveToken(const std::string& token_file_flag,
                                 const std::optional<std::string>& config_token_file) {
  if (!token_file_flag.empty()) return ReadTokenFile(token_file_flag);
  if (config_token_file) return ReadTokenFile(*config_token_file);
  return std::string();
}

}  // namespace codl::daemon
