#include "lib/rpc/authz.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <spdlog/spdlog.h>

#include "lib/common/read_file.h"
#include "lib/common/utf8.h"
#include "lib/rpc/connection_registry.h"
#include "lib/rpc/health.h"
#include "lib/rpc/status.h"
#include "lib/rpc/unix_listener.h"

namespace codl::rpc {

namespace {

constexpr const char* kRoleProperty = "codl_role";
constexpr const char* kIdProperty = "codl_id";
// + SHA-256 of a bearer token: "ROLE ID" of that token's holder (see Process).
constexpr const char* kTokenPropertyPrefix = "codl_token_";
constexpr std::string_view kUriScheme = "codl://";

struct RoleNameEntry {
  Role role;
  const char* name;
};
constexpr RoleNameEntry kRoleNames[] = {
    {Role::kController, "controller"},  {Role::kAgent, "agent"}, {Role::kUserRead, "user-read"},
    {Role::kUserSubmit, "user-submit"}, {Role::kAdmin, "admin"},
};

bool ValidId(std::string_view id) {
  if (id.empty() || id.size() > 253) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Agents and users are named; the controller is one per deployment; an admin may be either.
bool NeedsId(Role r) { return r == Role::kAgent || r == Role::kUserRead || r == Role::kUserSubmit; }

std::string ToString(grpc::string_ref s) { return std::string(s.data(), s.size()); }

}  // namespace

const char* RoleName(Role role) {
  for (const auto& e : kRoleNames) {
    if (e.role == role) return e.name;
  }
  return "?";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (const auto& e : kRoleNames) {
    if (name == e.name) return e.role;
  }
  return std::nullopt;
}

std::string Identity::ToString() const {
  return id.empty() ? RoleName(role) : std::string(RoleName(role)) + "/" + id;
}

std::optional<Identity> IdentityFromUri(std::string_view uri) {
  if (uri.substr(0, kUriScheme.size()) != kUriScheme) return std::nullopt;
  std::string_view rest = uri.substr(kUriScheme.size());
  const size_t slash = rest.find('/');
  auto role = ParseRole(rest.substr(0, slash));
  if (!role) return std::nullopt;
  std::string_view id = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  const bool any_agent = *role == Role::kAgent && id == kAnyAgent;
  if (slash != std::string_view::npos && !any_agent && !ValidId(id)) return std::nullopt;
  if (NeedsId(*role) && id.empty()) return std::nullopt;
  if (*role == Role::kController && !id.empty()) return std::nullopt;
  return Identity{*role, std::string(id)};
}

const std::map<std::string, std::set<Role>>& MethodTable() {
  // Reads are open to every user role; mutations to the one role whose job they are. Admin
  // (local root, or an admin certificate/token) may call everything.
  static const auto* table = [] {
    const std::set<Role> controller = {Role::kController, Role::kAdmin};
    const std::set<Role> agent = {Role::kAgent, Role::kAdmin};
    const std::set<Role> submit = {Role::kUserSubmit, Role::kAdmin};
    const std::set<Role> read = {Role::kUserRead, Role::kUserSubmit, Role::kAdmin};
    return new std::map<std::string, std::set<Role>>{
        // The agent: everything it does runs processes on its node, for the controller only.
        {"/codl.v1.Agent/Calibrate", controller},
        {"/codl.v1.Agent/StartAntagonist", controller},
        {"/codl.v1.Agent/GetAntagonist", controller},
        {"/codl.v1.Agent/StopAntagonist", controller},
        {"/codl.v1.Agent/RunVictim", controller},
        {"/codl.v1.Agent/StopAll", controller},
        {"/codl.v1.Agent/EndExperiment", controller},
        {"/codl.v1.Agent/StreamTelemetry", controller},
        {"/codl.v1.Agent/EstimateSetup", controller},
        {"/codl.v1.Agent/BeginNodeWindow", controller},
        {"/codl.v1.Agent/EndNodeWindow", controller},
        // The controller: agents report in (each for its own id: CheckAgentIdentity).
        {"/codl.v1.Controller/RegisterAgent", agent},
        {"/codl.v1.Controller/Heartbeat", agent},
        {"/codl.v1.Controller/PublishRendezvous", agent},
        {"/codl.v1.Controller/FetchRendezvous", agent},
        // Users: submitters start work on nodes, readers look.
        {"/codl.v1.Controller/SubmitExperiment", submit},
        {"/codl.v1.Controller/CancelExperiment", submit},
        {"/codl.v1.Controller/ResumeExperiment", submit},
        {"/codl.v1.Controller/CalibrateNode", submit},
        {"/codl.v1.Controller/GetExperiment", read},
        {"/codl.v1.Controller/WatchExperiment", read},
        {"/codl.v1.Controller/GetResults", read},
        {"/codl.v1.Controller/GetTrialTrace", read},
        {"/codl.v1.Controller/ListAgents", read},
    };
  }();
  return *table;
}

Status Authorize(const std::string& method, const Identity& who) {
  const auto& table = MethodTable();
  auto it = table.find(method);
  if (it == table.end()) return PermissionDenied("no authorization rule for " + method);
  if (it->second.count(who.role) == 0) {
    return PermissionDenied(who.ToString() + " may not call " + method);
  }
  return Status::Ok();
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

namespace {
std::optional<std::vector<unsigned char>> ParseHash(const std::string& hex) {
  if (hex.size() != 2 * SHA256_DIGEST_LENGTH) return std::nullopt;
  std::vector<unsigned char> out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    for (size_t j = i; j < i + 2; ++j) {
      const char c = hex[j];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        return std::nullopt;
      }
    }
    out.push_back(static_cast<unsigned char>(v));
  }
  return out;
}
}  // namespace

Result<TokenTable> TokenTable::Parse(const std::string& text, const std::string& filename) {
  TokenTable t;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    std::istringstream fields(line);
    std::string role_name, id, hex, extra;
    if (!(fields >> role_name) || role_name[0] == '#') continue;
    const std::string where = filename + ":" + std::to_string(n) + ": ";
    if (!(fields >> id >> hex) || (fields >> extra)) {
      return InvalidArgument(where + "expected 'ROLE ID SHA256-HEX'");
    }
    auto role = ParseRole(role_name);
    if (!role) return InvalidArgument(where + "unknown role '" + role_name + "'");
    if (id == "-") id.clear();
    if ((NeedsId(*role) || !id.empty()) && !ValidId(id)) {
      return InvalidArgument(where + "role " + role_name + " needs an id of [A-Za-z0-9._-]");
    }
    if (*role == Role::kController && !id.empty()) {
      return InvalidArgument(where + "the controller has no id: write '-'");
    }
    auto hash = ParseHash(hex);
    if (!hash) return InvalidArgument(where + "the hash must be 64 hex digits (sha256sum)");
    t.entries_.push_back({Identity{*role, id}, std::move(*hash)});
  }
  return t;
}

Result<TokenTable> TokenTable::Load(const std::string& path) {
  const std::optional<std::string> text = ReadFileText(path);
  if (!text) return InvalidArgument("cannot read tokens file '" + path + "'");
  return Parse(*text, path);
}

std::optional<Identity> TokenTable::Find(std::string_view token) const {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  const Entry* found = nullptr;
  for (const Entry& e : entries_) {  // no early exit: the time does not depend on the match
    if (CRYPTO_memcmp(e.hash.data(), digest, sizeof digest) == 0) found = &e;
  }
  if (found == nullptr) return std::nullopt;
  return found->who;
}

namespace {

// The codl:// identity in a peer certificate's subject alternative names.
Result<Identity> IdentityFromCertificate(const grpc::AuthContext& context) {
  for (const char* property : {"x509_subject_alternative_name", "peer_uri", "x509_uri"}) {
    for (const auto& value : context.FindPropertyValues(property)) {
      if (auto who = IdentityFromUri(ToString(value))) return *who;
    }
  }
  return Unauthenticated(
      "the client certificate carries no codl:// URI SAN identity "
      "(scripts/issue-certs.sh)");
}

std::optional<std::string> BearerToken(const grpc::AuthMetadataProcessor::InputMetadata& md) {
  auto it = md.find("authorization");
  if (it == md.end()) return std::nullopt;
  const std::string value = ToString(it->second);
  constexpr std::string_view kBearer = "Bearer ";
  if (value.compare(0, kBearer.size(), kBearer) != 0) return std::nullopt;
  return value.substr(kBearer.size());
}

bool IsTls(const grpc::AuthContext& context) {
  for (const auto& v : context.FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
    if (v == GRPC_SSL_TRANSPORT_SECURITY_TYPE || v == GRPC_TLS_TRANSPORT_SECURITY_TYPE) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<Identity> CallAuthorizer::Identify(const InputMetadata& metadata,
                                          const grpc::AuthContext& context) const {
  if (IsTls(context)) return IdentityFromCertificate(context);
  if (auto token = BearerToken(metadata)) {
    if (!policy_.tokens) return Unauthenticated("this server has no tokens file");
    if (auto who = policy_.tokens->Find(*token)) return *who;
    return Unauthenticated("unknown bearer token");
  }
  if (policy_.tokens)
    return Unauthenticated("this server requires a bearer token (docs/security.md)");
  if (policy_.trust_anonymous) return Identity{Role::kAdmin, ""};
  return Unauthenticated("no credentials: use mTLS, a token, or the daemon's unix socket");
}

grpc::Status CallAuthorizer::Process(const InputMetadata& metadata, grpc::AuthContext* context,
                                     OutputMetadata* /*consumed*/, OutputMetadata* /*response*/) {
  auto path = metadata.find(":path");
  if (path == metadata.end()) return ToGrpc(PermissionDenied("call without a method path"));
  // Probes carry no credentials; health says nothing but SERVING (docs/security.md).
  if (IsHealthMethod(ToString(path->second))) return grpc::Status::OK;
  auto who = Identify(metadata, *context);
  if (!who.ok()) return ToGrpc(who.status());
  if (Status s = Authorize(ToString(path->second), *who); !s.ok()) return ToGrpc(s);
  // The auth context is the connection's, shared by every call on it (gRPC 1.51): a property
  // added per call would name the first caller to every later call on the connection, whatever
  // its token (found by security_bounds_test). A connection's TLS certificate, or its
  // anonymity, is the same for all its calls: recorded once. Tokens may differ per call: each is
  // recorded under its hash, and CallerOf looks up the one the call carries.
  if (auto token = BearerToken(metadata)) {
    const std::string key = kTokenPropertyPrefix + Sha256Hex(*token);
    if (context->FindPropertyValues(key).empty()) {
      context->AddProperty(key, std::string(RoleName(who->role)) + " " + who->id);
    }
  } else if (context->FindPropertyValues(kRoleProperty).empty()) {
    context->AddProperty(kRoleProperty, RoleName(who->role));
    context->AddProperty(kIdProperty, who->id);
  }
  return grpc::Status::OK;
}

namespace {

// Every call in progress, by its server context (MethodRecorder): its method and, once
// CheckCaller counted it against the in-flight caps, the caller it was counted for.
struct CallEntry {
  std::string method;
  std::string counted;  // Identity::ToString(); "" when not counted
};
std::mutex& MethodsMu() {
  static std::mutex mu;
  return mu;
}
std::map<const grpc::ServerContextBase*, CallEntry>& Methods() {
  static auto* methods = new std::map<const grpc::ServerContextBase*, CallEntry>();
  return *methods;
}
// Calls in progress of each counted caller, and of all of them (MethodsMu held).
std::map<std::string, size_t>& InFlight() {
  static auto* in_flight = new std::map<std::string, size_t>();
  return *in_flight;
}
size_t& InFlightTotal() {
  static size_t total = 0;
  return total;
}
void Uncount(const std::string& who) {
  if (who.empty()) return;
  auto it = InFlight().find(who);
  if (it != InFlight().end() && --it->second == 0) InFlight().erase(it);
  --InFlightTotal();
}

// Lives exactly as long as its call: gRPC creates it before the handler runs and deletes it
// when the call is done.
class MethodRecorder final : public grpc::experimental::Interceptor {
 public:
  MethodRecorder(const grpc::ServerContextBase* ctx, std::string method) : ctx_(ctx) {
    std::lock_guard<std::mutex> l(MethodsMu());
    Methods()[ctx_] = CallEntry{std::move(method), ""};
  }
  ~MethodRecorder() override {
    std::lock_guard<std::mutex> l(MethodsMu());
    auto it = Methods().find(ctx_);
    if (it == Methods().end()) return;
    Uncount(it->second.counted);
    Methods().erase(it);
  }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    methods->Proceed();
  }

 private:
  const grpc::ServerContextBase* ctx_;
};

class MethodRecorderFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MethodRecorder(info->server_context(), info->method());
  }
};

std::optional<std::string> MethodOf(const grpc::ServerContextBase& ctx) {
  std::lock_guard<std::mutex> l(MethodsMu());
  auto it = Methods().find(&ctx);
  if (it == Methods().end()) return std::nullopt;
  return it->second.method;
}

// Counts the call against its caller's in-flight caps, once per call; ResourceExhausted naming
// the cap when the caller (or everyone counted) is at it.
Status CountCall(const grpc::ServerContextBase& ctx, const Identity& who) {
  if (who.role == Role::kAdmin) return Status::Ok();
  const ConnectionLimits caps = CurrentConnectionLimits();
  const std::string key = who.ToString();
  std::lock_guard<std::mutex> l(MethodsMu());
  auto it = Methods().find(&ctx);
  if (it == Methods().end() || !it->second.counted.empty()) return Status::Ok();
  size_t& mine = InFlight()[key];
  if (mine >= caps.calls_per_caller) {
    if (mine == 0) InFlight().erase(key);
    return ResourceExhausted(key + " already has " + std::to_string(mine) +
                             " calls in progress (max_calls_per_caller " +
                             std::to_string(caps.calls_per_caller) + ")");
  }
  if (InFlightTotal() >= caps.calls_total) {
    if (mine == 0) InFlight().erase(key);
    return ResourceExhausted("the daemon already has " + std::to_string(InFlightTotal()) +
                             " calls of non-admin callers in progress (max_calls " +
                             std::to_string(caps.calls_total) + ")");
  }
  ++mine;
  ++InFlightTotal();
  it->second.counted = key;
  return Status::Ok();
}

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewMethodRecorder() {
  return std::make_unique<MethodRecorderFactory>();
}

Result<Identity> CallerOf(const grpc::ServerContextBase& ctx) {
  auto auth = ctx.auth_context();
  if (!auth) return Unauthenticated("call without an auth context");
  const auto& md = ctx.client_metadata();
  constexpr std::string_view kBearer = "Bearer ";
  auto it = md.find("authorization");
  if (it != md.end() && ToString(it->second).compare(0, kBearer.size(), kBearer) == 0) {
    const std::string token = ToString(it->second).substr(kBearer.size());
    auto found = auth->FindPropertyValues(kTokenPropertyPrefix + Sha256Hex(token));
    if (found.empty()) return Unauthenticated("the call's token was not authorized");
    const std::string recorded = ToString(found.front());
    const size_t space = recorded.find(' ');
    auto role = ParseRole(recorded.substr(0, space));
    if (!role || space == std::string::npos) return Unauthenticated("unknown role recorded");
    return Identity{*role, recorded.substr(space + 1)};
  }
  auto roles = auth->FindPropertyValues(kRoleProperty);
  if (!roles.empty()) {
    auto role = ParseRole(ToString(roles.front()));
    auto ids = auth->FindPropertyValues(kIdProperty);
    if (!role) return Unauthenticated("unknown role recorded for the call");
    return Identity{*role, ids.empty() ? "" : ToString(ids.front())};
  }
  // Only unix-socket connections run without the authorizer: UnixListener admitted them by uid
  // (root, the daemon's own, or one LocalRoles grants a role) and handed them over as "fd:N"
  // channels, which carry no transport security properties at all.
  if (auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME).empty()) {
    if (auto who = LocalPeerOf(ctx.peer())) {
      if (who->role == Role::kAdmin) return *who;  // the table lets admins call every method
      auto method = MethodOf(ctx);
      if (!method) return Unauthenticated("the call's method is unknown; refused");
      if (Status s = Authorize(*method, *who); !s.ok()) return s;
      return *who;
    }
  }
  return Unauthenticated("the call was not authorized");
}

namespace {
// The call's TCP connection counted for its caller (AttributeConnection), then CountCall; a
// refusal logged (at most one line a second).
grpc::Status Counted(const grpc::ServerContextBase& ctx, const Identity& who) {
  Status s = AttributeConnection(ctx.peer(), who);
  if (s.ok()) s = CountCall(ctx, who);
  if (!s.ok()) {
    // At most one line a second: a caller at its cap must not flood the log instead.
    static std::atomic<int64_t> last_log_s{0};
    const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
    if (last_log_s.exchange(now_s) != now_s)
      spdlog::warn("refused a call: {}", TerminalSafe(s.error()));
    return ToGrpc(s);
  }
  return grpc::Status::OK;
}
}  // namespace

grpc::Status CheckCaller(const grpc::ServerContextBase* ctx) {
  auto who = CallerOf(*ctx);
  if (!who.ok()) return ToGrpc(who.status());
  return Counted(*ctx, *who);
}

std::map<std::string, size_t> CallsInProgressByCaller() {
  std::lock_guard<std::mutex> l(MethodsMu());
  return InFlight();
}

grpc::Status CheckAgentIdentity(const grpc::ServerContextBase& ctx, const std::string& agent_id) {
  auto who = CallerOf(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  if (who->role == Role::kAgent && who->id != kAnyAgent && who->id != agent_id) {
    return ToGrpc(PermissionDenied(who->ToString() + " may not act for agent '" + agent_id + "'"));
  }
  return Counted(ctx, *who);
}

}  // namespace codl::rpc
