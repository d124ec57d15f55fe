#include "lib/daemon/bootstrap.h"

#include <signal.h>

#include <cstdio>

#include <spdlog/spdlog.h>

#include "lib/common/cli_help.h"
#include "lib/daemon/cli_flags.h"
#include "lib/daemon/logging.h"
#include "lib/daemon/service_notifier.h"
#include "lib/rpc/connection_registry.h"
#include "lib/rpc/health.h"
#include "lib/rpc/local_roles.h"

namespace codl::daemon {

DaemonBootstrap::DaemonBootstrap(std::string name, const std::string& description,
                                 std::string default_config)
    : name_(std::move(name)), default_config_(std::move(default_config)), app_{description} {
  UsePlainHelp(app_);
  config_flag_ = AddConfigFlag(app_, &config_path_, default_config_);
  app_.add_option("--log-level", log_level_, "debug | info | warn | error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
  app_.add_option("--log-format", log_format_,
                  "text | json (one object per line: ts, level, msg, component)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void DaemonBootstrap::AddHealthFlag(const std::string& service) {
  health_service_ = service;
  app_.add_option("--health-listen", health_listen_,
                  "serve only the gRPC health service, plaintext, on this host:port (for "
                  "Kubernetes grpc probes; default: off)");
}

std::optional<int> DaemonBootstrap::ApplyLoggingAndHealth(
    const std::optional<std::string>& log_level, const std::optional<std::string>& log_format,
    const std::optional<std::string>& health_listen) {
  if (log_level && !Given("--log-level")) log_level_ = *log_level;
  if (log_format && !Given("--log-format")) log_format_ = *log_format;
  if (health_listen && !health_service_.empty() && !Given("--health-listen"))
    health_listen_ = *health_listen;
  if (Status s = ConfigureLogging(name_, log_level_, log_format_); !s.ok()) return Fail(s.error());
  logging_configured_ = true;
  return std::nullopt;
}

void DaemonBootstrap::AddTlsFlags(std::string* ca, std::string* cert, std::string* key) {
  app_.add_option("--tls-ca", *ca, "PEM CA bundle (mTLS)");
  app_.add_option("--tls-cert", *cert, "PEM certificate (mTLS)");
  app_.add_option("--tls-key", *key, "PEM private key (mTLS)");
  tls_[0] = ca;
  tls_[1] = cert;
  tls_[2] = key;
}

void DaemonBootstrap::AddTokenFlags(const std::string& token_help, const std::string& tokens_help,
                                    bool* insecure) {
  app_.add_option("--token", token_flag_, "removed: a token on the command line is visible in ps")
      ->group("");
  app_.add_option("--token-file", token_file_flag_, token_help);
  app_.add_option("--tokens-file", tokens_file_flag_, tokens_help);
  app_.add_flag("--insecure", *insecure,
                "allow plaintext gRPC on a loopback TCP --listen address (default: unix sockets "
                "or TLS only; without --tokens-file every local user becomes admin)");
  app_.add_option("--unix-role", unix_role_flags_,
                  "ROLE=WHO (repeatable): a local user or group that may use the unix socket, "
                  "and as what; ROLE user-read|user-submit|admin, WHO uid:N|gid:N|user:NAME|"
                  "group:NAME (default: root and the daemon's own uid only, as admin)");
}

void DaemonBootstrap::AddMetricsFlag(std::string* listen) {
  app_.add_option("--metrics-listen", *listen,
                  "serve Prometheus /metrics on this host:port (default: off)");
}

CLI::Option* DaemonBootstrap::AddDurationFlag(const std::string& name, double* seconds,
                                              const std::string& help,
                                              const std::string& default_text, bool allow_zero) {
  return app_.add_option(name, *seconds, help)
      ->transform(DurationFlag(allow_zero))
      ->default_str(default_text);
}

int DaemonBootstrap::Fail(const std::string& message, int code) const {
  // Once JSON logging is on, stderr stays JSON lines.
  if (logging_configured_ && log_format_ == "json") {
    spdlog::error("{}", message);
    return code;
  }
  fprintf(stderr, "%s: %s\n", name_.c_str(), message.c_str());
  return code;
}

std::optional<int> DaemonBootstrap::Parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app_.exit(e) == 0 ? 0 : 2;  // --help prints and succeeds; a bad flag is a usage error
  }
  return std::nullopt;
}

std::optional<int> DaemonBootstrap::AfterLoad(
    const std::string& path, const std::optional<TlsPaths>& tls,
    const std::optional<std::string>& token_file, const std::optional<std::string>& tokens_file,
    const std::optional<std::vector<std::string>>& unix_roles,
    const ConnectionConfig& connections) {
  // The file's tls block is all or nothing: one --tls-* flag replaces the whole of it.
  const bool tls_flag_given = Given("--tls-ca") || Given("--tls-cert") || Given("--tls-key");
  if (tls && tls_[0] != nullptr && !tls_flag_given) {
    *tls_[0] = tls->ca;
    *tls_[1] = tls->cert;
    *tls_[2] = tls->key;
  }
  if (Given("--token")) {
    return Fail(
        "--token is removed (other users see it in ps): put the token in a file of mode "
        "0600 and pass --token-file");
  }
  // Secrets are checked before they are read: a readable token or key is already leaked, a
  // writable tokens file lets anyone add an admin (docs/security.md, "Secrets").
  const std::string token_path =
      !token_file_flag_.empty() ? token_file_flag_ : token_file.value_or("");
  const std::string table_path =
      Given("--tokens-file") ? tokens_file_flag_ : tokens_file.value_or("");
  const std::string key_path = tls_[2] != nullptr ? *tls_[2] : "";
  for (const auto& [secret, what] :
       {std::pair{token_path, "token_file"}, std::pair{table_path, "tokens_file"},
        std::pair{key_path, "TLS key"}}) {
    if (secret.empty()) continue;
    if (Status s = CheckPrivateFile(secret, what); !s.ok()) return Fail(s.error());
  }
  auto token = ResolveToken(token_file_flag_, token_file);
  if (!token.ok()) return Fail(token.error());
  token_ = *token;
  if (!table_path.empty()) {
    auto loaded = rpc::TokenTable::Load(table_path);
    if (!loaded.ok()) return Fail(loaded.error());
    tokens_ = std::make_shared<const rpc::TokenTable>(std::move(*loaded));
  }
  // Unix-socket callers by uid (lib/rpc/local_roles.h): flags replace the file's list.
  auto roles = rpc::LocalRoles::Parse(
      Given("--unix-role") ? unix_role_flags_ : unix_roles.value_or(std::vector<std::string>{}));
  if (!roles.ok()) return Fail(roles.error());
  rpc::SetLocalRoles(*roles);
  rpc::ConnectionLimits limits;
  if (connections.max_connections) limits.total = static_cast<size_t>(*connections.max_connections);
  if (connections.max_connections_per_caller)
    limits.per_caller = static_cast<size_t>(*connections.max_connections_per_caller);
  if (connections.idle_timeout_s) limits.idle_timeout_s = *connections.idle_timeout_s;
  if (connections.max_unauthenticated_connections) {
    limits.unauthenticated = static_cast<size_t>(*connections.max_unauthenticated_connections);
  }
  if (connections.max_unauthenticated_connections_per_ip) {
    limits.unauthenticated_per_ip =
        static_cast<size_t>(*connections.max_unauthenticated_connections_per_ip);
  }
  if (connections.handshake_timeout_s)
    limits.handshake_timeout_s = *connections.handshake_timeout_s;
  if (connections.max_calls) limits.calls_total = static_cast<size_t>(*connections.max_calls);
  if (connections.max_calls_per_caller)
    limits.calls_per_caller = static_cast<size_t>(*connections.max_calls_per_caller);
  rpc::SetConnectionLimits(limits);
  if (!path.empty()) spdlog::info("{}: config {}", name_, path);
  return std::nullopt;
}

int DaemonBootstrap::Serve(const Service& service) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads inherit the mask: before any starts

  ServiceNotifier notifier;
  if (Status s = service.start(); !s.ok()) return Fail(s.error(), 1);
  std::unique_ptr<rpc::HealthOnlyServer> health;
  if (!health_listen_.empty()) {
    auto h = rpc::HealthOnlyServer::Start(health_listen_, health_service_);
    if (!h.ok()) {
      service.stop();
      return Fail(h.error(), 1);
    }
    health = std::move(*h);
    spdlog::info("{}: gRPC health on {} (plaintext, health service only)", name_,
                 health->address());
  }
  notifier.Ready(service.ready());
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("{}: signal {}, {}", name_, sig, service.on_signal);
  if (health) health->Drain();  // probes see NOT_SERVING while the daemon drains
  notifier.Stopping();
  service.stop();
  return 0;
}

}  // namespace codl::daemon
