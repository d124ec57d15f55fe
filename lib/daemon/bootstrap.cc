#include "lib/daemon/bootstrap.h"

#include <signal.h>

#include <cstdio>

#include <spdlog/spdlog.h>

#include "lib/daemon/cli_flags.h"
#include "lib/daemon/service_notifier.h"

namespace codl::daemon {

DaemonBootstrap::DaemonBootstrap(std::string name, const std::string& description,
                                 std::string default_config)
    : name_(std::move(name)), default_config_(std::move(default_config)), app_{description} {
  config_flag_ = AddConfigFlag(app_, &config_path_, default_config_);
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
                                              const std::string& default_text) {
  return app_.add_option(name, *seconds, help)
      ->transform(DurationFlag())
      ->default_str(default_text);
}

int DaemonBootstrap::Fail(const std::string& message, int code) const {
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
    const std::optional<std::vector<std::string>>& unix_roles) {
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
  auto token = ResolveToken(token_file_flag_, token_file);
  if (!token.ok()) return Fail(token.error());
  token_ = *token;
  const std::string table = Given("--tokens-file") ? tokens_file_flag_ : tokens_file.value_or("");
  if (!table.empty()) {
    auto loaded = rpc::TokenTable::Load(table);
    if (!loaded.ok()) return Fail(loaded.error());
    tokens_ = std::make_shared<const rpc::TokenTable>(std::move(*loaded));
  }
  // Unix-socket callers by uid (lib/rpc/local_roles.h): flags replace the file's list.
  auto roles = rpc::LocalRoles::Parse(
      Given("--unix-role") ? unix_role_flags_ : unix_roles.value_or(std::vector<std::string>{}));
  if (!roles.ok()) return Fail(roles.error());
  rpc::SetLocalRoles(*roles);
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
  notifier.Ready(service.ready());
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("{}: signal {}, {}", name_, sig, service.on_signal);
  notifier.Stopping();
  service.stop();
  return 0;
}

}  // namespace codl::daemon
