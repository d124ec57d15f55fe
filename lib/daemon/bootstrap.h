// DaemonBootstrap: everything codl-agent and codl-controller do alike around their own options,
// so each main.cc only declares its flags and file keys:
// - the CLI11 app with --config, --log-level/--log-format (logging.h), the mTLS / token /
//   --insecure / metrics / health flags and duration flags;
// - parsing, loading the config file (--config, else the default path when it exists), the
//   file's tls block unless a --tls-* flag was given, the bearer token this daemon presents and
//   the tokens file its callers are checked against (docs/security.md);
// - serving: SIGINT/SIGTERM blocked before any thread starts, sd_notify READY with a status
//   line, the health-only port (--health-listen), sigwait, NOT_SERVING + STOPPING, stop.
// Errors are printed as "NAME: message"; exit codes: 2 for bad flags or files, 1 when the
// daemon cannot start, 0 after a clean stop (and for --help).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "lib/common/result.h"
#include "lib/daemon/daemon_config.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/local_roles.h"

namespace codl::daemon {

class DaemonBootstrap {
 public:
  DaemonBootstrap(std::string name, const std::string& description, std::string default_config);
  CLI::App& app() { return app_; }

  // --tls-ca, --tls-cert, --tls-key (PEM files for mTLS).
  void AddTlsFlags(std::string* ca, std::string* cert, std::string* key);
  // --token-file (the token this daemon presents; `token_help` says to whom), --tokens-file
  // (hashes of the tokens its callers present; `tokens_help` says who they are), --insecure
  // (plaintext TCP listen) and the removed --token, which now fails with a pointer to
  // --token-file.
  void AddTokenFlags(const std::string& token_help, const std::string& tokens_help, bool* insecure);
  // --metrics-listen: Prometheus /metrics host:port, off by default.
  void AddMetricsFlag(std::string* listen);
  // --health-listen: a plaintext host:port carrying only grpc.health.v1.Health, reporting ""
  // and `service` ("codl.v1.Agent"), for probes without the mTLS certificate (rpc/health.h).
  void AddHealthFlag(const std::string& service);
  // A duration flag in seconds ("10s", "500ms", "2m"; > 0, or 0 too with `allow_zero`);
  // --help shows `default_text`.
  CLI::Option* AddDurationFlag(const std::string& name, double* seconds, const std::string& help,
                               const std::string& default_text, bool allow_zero = false);

  // Parses argv and loads the config file into `file` (every key unset when there is none),
  // applies its tls block and resolves the token. Returns the exit code when main should stop
  // here (--help: 0; an error, printed: 2), nullopt to go on.
  template <class Config>
  std::optional<int> Load(int argc, char** argv, Result<Config> (*load)(const std::string&),
                          Config* file);

  // Whether `flag` was given on the command line (it then overrides the file).
  bool Given(const char* flag) const { return app_.count(flag) > 0; }
  // The bearer token resolved by Load ("" when none is configured).
  const std::string& token() const { return token_; }
  // The tokens file loaded by Load (null when none is configured).
  std::shared_ptr<const rpc::TokenTable> tokens() const { return tokens_; }

  struct Service {
    std::function<Status()> start;       // builds and starts the daemon; threads may start here
    std::function<std::string()> ready;  // READY=1's STATUS= line, asked once started
    std::function<void()> stop;          // after SIGINT/SIGTERM
    std::string on_signal;               // logged as "NAME: signal N, <on_signal>"
  };
  // Blocks SIGINT/SIGTERM (in every thread: it must run before `start`), starts, notifies
  // READY, waits for a signal, notifies STOPPING and stops. Returns the exit code.
  int Serve(const Service& service);

  // Prints "NAME: message" to stderr and returns `code`.
  int Fail(const std::string& message, int code = 2) const;

 private:
  std::optional<int> Parse(int argc, char** argv);
  std::optional<int> AfterLoad(const std::string& path, const std::optional<TlsPaths>& tls,
                               const std::optional<std::string>& token_file,
                               const std::optional<std::string>& tokens_file,
                               const std::optional<std::vector<std::string>>& unix_roles,
                               const ConnectionConfig& connections);
  // --log-level/--log-format over the file's log_level/log_format; --health-listen over
  // health_listen.
  std::optional<int> ApplyLoggingAndHealth(const std::optional<std::string>& log_level,
                                           const std::optional<std::string>& log_format,
                                           const std::optional<std::string>& health_listen);

  std::string name_;
  std::string default_config_;
  CLI::App app_;
  std::string config_path_;
  CLI::Option* config_flag_ = nullptr;
  std::string* tls_[3] = {nullptr, nullptr, nullptr};  // ca, cert, key
  std::string token_flag_, token_file_flag_, tokens_file_flag_, token_;
  std::shared_ptr<const rpc::TokenTable> tokens_;
  std::string log_level_ = "info", log_format_ = "text";
  std::string health_listen_, health_service_;
  bool logging_configured_ = false;
  std::vector<std::string> unix_role_flags_;
};

template <class Config>
std::optional<int> DaemonBootstrap::Load(int argc, char** argv,
                                         Result<Config> (*load)(const std::string&), Config* file) {
  if (auto exit = Parse(argc, argv)) return exit;
  auto path = ResolveConfigPath(config_path_, config_flag_->count() > 0, default_config_);
  if (!path.ok()) return Fail(path.error());
  auto loaded = load(*path);
  if (!loaded.ok()) return Fail(loaded.error());
  *file = std::move(*loaded);
  if (auto exit = ApplyLoggingAndHealth(file->log_level, file->log_format, file->health_listen))
    return exit;
  return AfterLoad(*path, file->tls, file->token_file, file->tokens_file, file->unix_roles,
                   file->connections);
}

}  // namespace codl::daemon
