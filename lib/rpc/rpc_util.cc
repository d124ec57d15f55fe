#include "lib/rpc/rpc_util.h"
#include "lib/rpc/health.h"
#include "lib/rpc/tcp_listener.h"
#include "lib/rpc/unix_listener.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <random>
#include <sstream>

#include <absl/synchronization/mutex.h>
#include <grpcpp/security/server_credentials.h>
#include <spdlog/spdlog.h>

#include "lib/common/read_file.h"
#include "lib/common/tunables.h"

namespace codl::rpc {

namespace {
std::string& TokenStorage() {
  static std::string token;
  return token;
}
}  // namespace

void SetBearerToken(const std::string& token) { TokenStorage() = token; }
const std::string& BearerToken() { return TokenStorage(); }

std::unique_ptr<grpc::ClientContext> MakeContext(double deadline_s) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<int64_t>(deadline_s * 1e6)));
  if (!BearerToken().empty()) ctx->AddMetadata("authorization", "Bearer " + BearerToken());
  return ctx;
}

bool IsLocalAddress(const std::string& address) {
  if (address.rfind("unix:", 0) == 0) return true;
  std::string host = address;
  if (!host.empty() && host[0] == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (auto colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) {
    return (ntohl(a.s_addr) >> 24) == 127;
  }
  return false;
}

namespace {
Result<std::string> ReadFile(const std::string& path, const char* what) {
  std::optional<std::string> text = ReadFileText(path);
  if (!text) return InvalidArgument(std::string("cannot read ") + what + " file '" + path + "'");
  return std::move(*text);
}

// The three PEM files of a TLS endpoint, each read with an error that names it.
struct Pem {
  std::string ca, cert, key;
};

Result<Pem> ReadPem(const TlsFiles& tls) {
  auto ca = ReadFile(tls.ca, "CA");
  auto cert = ReadFile(tls.cert, "certificate");
  auto key = ReadFile(tls.key, "key");
  if (!ca.ok()) return ca.status();
  if (!cert.ok()) return cert.status();
  if (!key.ok()) return key.status();
  return Pem{*ca, *cert, *key};
}
}  // namespace

Status CheckEndpointSecurity(const Endpoint& e) {
  if (!e.tls.enabled()) {
    if (!IsLocalAddress(e.address)) {
      return InvalidArgument("refusing plaintext gRPC on non-loopback address '" + e.address +
                             "': configure TLS (--tls-cert/--tls-key/--tls-ca) for mTLS");
    }
    return Status::Ok();
  }
  for (const auto* f : {&e.tls.ca, &e.tls.cert, &e.tls.key}) {
    if (f->empty())
      return InvalidArgument("TLS needs all of --tls-ca, --tls-cert and --tls-key (mutual TLS)");
    struct stat st {};
    if (stat(f->c_str(), &st) != 0) return InvalidArgument("TLS file '" + *f + "' does not exist");
  }
  return Status::Ok();
}

Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  auto pem = ReadPem(tls);
  if (!pem.ok()) return pem.status();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = pem->ca;
  o.pem_cert_chain = pem->cert;
  o.pem_private_key = pem->key;
  return grpc::SslCredentials(o);
}

Result<std::shared_ptr<grpc::Channel>> MakeChannel(const Endpoint& e) {
  if (Status s = CheckEndpointSecurity(e); !s.ok()) return s;
  auto creds = MakeChannelCredentials(e.tls);
  if (!creds.ok()) return creds.status();
  return MakeChannel(e, *creds);
}

Result<std::shared_ptr<grpc::Channel>> MakeChannel(
    const Endpoint& e, const std::shared_ptr<grpc::ChannelCredentials>& creds) {
  if (Status s = CheckEndpointSecurity(e); !s.ok()) return s;
  grpc::ChannelArguments args;
  // Reconnect within a few seconds (the dead-man switch, a lease of >= 10 s, depends on noticing
  // a lost peer), but give a handshake time: gRPC also uses the minimum backoff as the connect
  // timeout, and at 100 ms a storm of 1,000 mTLS handshakes on a busy controller timed out and
  // retried in lockstep (docs/performance.md, "mTLS registration storm"). gRPC jitters each
  // backoff by +-20%, which spreads the retries.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 4000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, tunables::kClientKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, tunables::kClientKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // a quiet watch keeps being checked
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(e.address, creds, args);
}

Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Endpoint& e) {
  if (Status s = CheckEndpointSecurity(e); !s.ok()) return s;
  if (!e.tls.enabled()) return grpc::InsecureServerCredentials();
  auto pem = ReadPem(e.tls);
  if (!pem.ok()) return pem.status();
  grpc::SslServerCredentialsOptions o(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = pem->ca;
  o.pem_key_cert_pairs.push_back({pem->key, pem->cert});
  return grpc::SslServerCredentials(o);
}

namespace {
// Credentials for a TCP port, every call going through the CallAuthorizer.
Result<std::shared_ptr<grpc::ServerCredentials>> TcpServerCredentials(
    const Endpoint& e, std::shared_ptr<const TokenTable> tokens) {
  if (Status s = CheckEndpointSecurity(e); !s.ok()) return s;
  std::shared_ptr<grpc::ServerCredentials> creds;
  CallerPolicy policy{tokens, false};
  if (e.tls.enabled()) {
    auto tls = MakeServerCredentials(e);
    if (!tls.ok()) return tls.status();
    creds = *tls;
  } else {
    if (!e.insecure) {
      return InvalidArgument("refusing plaintext TCP on '" + e.address +
                             "': any local user could call it. Listen on unix:/PATH, configure "
                             "TLS (--tls-*), or pass --insecure");
    }
    // "Local" credentials: plaintext on the wire (clients dial it as insecure), but unlike
    // InsecureServerCredentials they take an AuthMetadataProcessor, and only on loopback.
    creds = grpc::experimental::LocalServerCredentials(LOCAL_TCP);
    policy.trust_anonymous = tokens == nullptr;
    spdlog::warn("--insecure: plaintext gRPC on {}{}", e.address,
                 tokens ? " (bearer tokens required)"
                        : ": every local user may call every method, as admin");
  }
  creds->SetAuthMetadataProcessor(std::make_shared<CallAuthorizer>(policy));
  return creds;
}
}  // namespace

void StartedServer::Stop() {
  if (listener) listener->Stop();
}

Result<StartedServer> StartServer(const Endpoint& listen,
                                  const std::vector<grpc::Service*>& services,
                                  const std::string& who,
                                  std::shared_ptr<const TokenTable> tokens) {
  StartedServer started;
  started.address = listen.address;
  DisableMutexDeadlockDetection();
  EnableHealthService();  // grpc.health.v1 on every daemon port (health.h)
  grpc::ServerBuilder builder;
  // Bounded requests (security issue, item 4): the largest legitimate one is a submitted YAML
  // (itself capped by the YAML reader) or a victim spec; 16 MiB leaves ample room.
  builder.SetMaxReceiveMessageSize(16 << 20);
  // Keepalive agreed with the clients' (tunables.h): their pings on a quiet stream are never
  // strikes, so a watch that waits an hour for its next event is not dropped.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             tunables::kServerMinPingIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A connection with no call for this long is closed (ConnectionLimits): one that never sends
  // a byte holds a descriptor no longer than that. Clients reconnect on their next call.
  const double idle_s = CurrentConnectionLimits().idle_timeout_s;
  if (idle_s > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               static_cast<int>(std::min(idle_s * 1e3, 2e9)));
  }
  if (listen.address.rfind("unix:", 0) == 0) {
    auto l = UnixListener::Open(listen.address.substr(5));
    if (!l.ok()) return Error{who + " --listen: " + l.error(), l.status().code()};
    started.listener = std::move(*l);
  } else {
    auto creds = TcpServerCredentials(listen, tokens);
    if (!creds.ok()) return Error{who + " --listen: " + creds.error(), creds.status().code()};
    auto l = TcpListener::Open(listen.address, *creds, &builder);
    if (!l.ok()) return Error{who + " --listen: " + l.error(), l.status().code()};
    started.address =
        listen.address.substr(0, listen.address.rfind(':')) + ":" + std::to_string((*l)->port());
    started.listener = std::move(*l);
  }
  for (grpc::Service* service : services) builder.RegisterService(service);
  // Unix-socket calls are checked against the method table by CallerOf (authz.h).
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> recorders;
  recorders.push_back(NewMethodRecorder());
  builder.experimental().SetInterceptorCreators(std::move(recorders));
  started.server = builder.BuildAndStart();
  if (!started.server) return Unavailable(who + ": cannot listen on '" + listen.address + "'");
  started.listener->Start(started.server.get());
  return started;
}

std::string NewIdempotencyKey() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}() ^ (static_cast<uint64_t>(UnixNanosNow()));
  char buf[40];
  snprintf(buf, sizeof buf, "%016llx-%llu", static_cast<unsigned long long>(salt),
           static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
}

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

int64_t UnixNanosNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace codl::rpc
