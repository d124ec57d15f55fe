// Who may call what: caller identities, the per-method role table, and the one authorizer every
// daemon's server runs (docs/security.md).
// - Identity: a role and, for agents and users, an id. It comes from the caller's mTLS
//   certificate (a URI SAN "codl://ROLE[/ID]"), else from a bearer token found in the daemon's
//   tokens file (stored as SHA-256 hashes), else, on unix sockets, from the peer's uid
//   (unix_listener.h: only root and the daemon's own uid get in, as admin).
// - MethodTable: every RPC of every service names the roles it serves; a method missing from
//   the table is refused (tests/security checks the table covers the protos).
// - CallAuthorizer: the gRPC AuthMetadataProcessor installed on every TCP port (TLS or local
//   plaintext); it identifies the caller, applies the table before any handler runs, and
//   records the identity in the call's AuthContext for handlers that bind an id to a request
//   (CheckAgentIdentity).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/support/server_interceptor.h>

#include "lib/common/result.h"

namespace codl::rpc {

enum class Role { kController, kAgent, kUserRead, kUserSubmit, kAdmin };

// "controller", "agent", "user-read", "user-submit", "admin".
const char* RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);

struct Identity {
  Role role = Role::kUserRead;
  std::string id;  // agent id or user name; "" for the controller and local admins
  std::string ToString() const;
};

// "codl://controller", "codl://agent/<id>", "codl://user-read/<name>",
// "codl://user-submit/<name>", "codl://admin/<name>". Agents and users need an id; the id is
// [A-Za-z0-9._-]+, or kAnyAgent for an agent certificate shared by a node pool (weaker: it may
// act for any agent id; docs/security.md). nullopt for anything else.
inline constexpr const char* kAnyAgent = "*";
std::optional<Identity> IdentityFromUri(std::string_view uri);

// Full method name ("/codl.v1.Agent/RunVictim") -> the roles it serves.
const std::map<std::string, std::set<Role>>& MethodTable();

// OK when `who` may call `method`; PERMISSION_DENIED naming both otherwise (also for a method
// the table does not list).
Status Authorize(const std::string& method, const Identity& who);

// The tokens file: one "ROLE ID SHA256-HEX" line per token ("-" as ID for the controller);
// blank lines and "#" comments are skipped. Only hashes are stored, so the file is not a
// secret; the tokens themselves live in each client's --token-file.
class TokenTable {
 public:
  static Result<TokenTable> Parse(const std::string& text, const std::string& filename);
  static Result<TokenTable> Load(const std::string& path);
  // The identity whose hash matches SHA-256(token). Every entry is compared in constant time,
  // so the time taken says nothing about which entry (or how much of one) matched.
  std::optional<Identity> Find(std::string_view token) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Identity who;
    std::vector<unsigned char> hash;  // 32 bytes
  };
  std::vector<Entry> entries_;
};

// Lower-case hex SHA-256 of `data` (what a tokens file stores).
std::string Sha256Hex(std::string_view data);

// How a server identifies callers that present no certificate.
struct CallerPolicy {
  std::shared_ptr<const TokenTable> tokens;  // null: no tokens file
  // Plaintext TCP without a tokens file: every caller is trusted as admin. Only with the
  // daemon's explicit --insecure (which also warns at start).
  bool trust_anonymous = false;
};

class CallAuthorizer final : public grpc::AuthMetadataProcessor {
 public:
  explicit CallAuthorizer(CallerPolicy policy) : policy_(std::move(policy)) {}
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata* response) override;

  // The caller's identity, or the reason it has none (UNAUTHENTICATED).
  Result<Identity> Identify(const InputMetadata& metadata, const grpc::AuthContext& context) const;

 private:
  CallerPolicy policy_;
};

// Unix-socket connections bypass the CallAuthorizer (gRPC runs no metadata processor on them),
// so their calls are checked against the MethodTable in CallerOf, by the method this
// interceptor records for each call. rpc::StartServer installs it on every server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewMethodRecorder();

// The identity the authorizer recorded for the call. Calls that reached the server over a unix
// socket have the identity UnixListener gave their peer's uid (local_roles.h) — root and the
// daemon's own uid are admins — and are refused (PERMISSION_DENIED) when that role may not call
// the method.
Result<Identity> CallerOf(const grpc::ServerContextBase& ctx);

// Every handler's first check, behind the authorizer: OK when an identity was established for
// the call (fails closed should a server ever run without the authorizer), its TCP connection
// fits the caller's connection caps (the first such call counts the connection for the caller:
// AttributeConnection in connection_registry.h) and the call fits its caller's in-flight caps
// (ConnectionLimits::calls_per_caller, calls_total; admins are not counted): RESOURCE_EXHAUSTED
// naming the cap otherwise. The call count is released when the call ends.
grpc::Status CheckCaller(const grpc::ServerContextBase* ctx);
// Counted calls in progress by caller ("user-read/alice": 3): tests and the log.
std::map<std::string, size_t> CallsInProgressByCaller();

// For RPCs an agent makes about itself (register, heartbeat): OK unless the caller is an agent
// whose identity names another id (PERMISSION_DENIED).
grpc::Status CheckAgentIdentity(const grpc::ServerContextBase& ctx, const std::string& agent_id);

}  // namespace codl::rpc
