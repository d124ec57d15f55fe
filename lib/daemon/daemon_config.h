// Config files of the two daemons (/etc/codl/agent.yaml, /etc/codl/controller.yaml), parsed into
// plain structs. A key the file does not set stays std::nullopt, so the daemon's own default
// applies and a command-line flag can override the file key by key. Every rejection (syntax,
// unknown key, wrong type, out-of-range value) reads "FILE:LINE:COL: key: message".
// Relative paths in a file are taken relative to the file's directory. Keys are documented in
// docs/configuration.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::daemon {

inline constexpr const char* kDefaultAgentConfig = "/etc/codl/agent.yaml";
inline constexpr const char* kDefaultControllerConfig = "/etc/codl/controller.yaml";

// PEM files for mTLS; a `tls:` block must name all three.
struct TlsPaths {
  std::string ca;
  std::string cert;
  std::string key;
};

// Connection caps both daemons take (rpc::ConnectionLimits; docs/configuration.md).
struct ConnectionConfig {
  std::optional<int64_t> max_connections;                  // of non-admin callers, all listeners
  std::optional<int64_t> max_connections_per_caller;       // of one non-admin uid or identity
  std::optional<int64_t> max_unauthenticated_connections;  // TCP, no authorized call yet
  std::optional<int64_t> max_unauthenticated_connections_per_ip;  // of them, from one IP
  std::optional<double> handshake_timeout_s;    // TCP: no authorized call this long: closed
  std::optional<int64_t> max_calls;             // calls in progress, counted callers
  std::optional<int64_t> max_calls_per_caller;  // of one identity
  std::optional<double> idle_timeout_s;         // no call for this long: closed
};

struct AgentConfig {
  std::optional<std::string> controller;      // controller address
  std::optional<std::string> listen;          // this agent's service address (port 0: ephemeral)
  std::optional<std::string> advertise;       // address the controller dials
  std::optional<std::string> id;              // agent id
  std::map<std::string, std::string> labels;  // user labels; empty: none
  std::optional<std::vector<std::string>> scratch_roots;  // absolute directories
  std::optional<std::vector<std::string>> cache_roots;    // victim.cache.paths may lie here too
  std::optional<uint64_t> cache_max_bytes;                // victim.cache: bytes per trial
  std::optional<double> cache_max_time_s;                 // victim.cache: time per trial
  std::optional<bool> allow_victim;
  std::optional<double> max_level;  // (0, 1]
  std::optional<double> lease_s;
  std::optional<double> heartbeat_interval_s;
  std::optional<std::string> state_dir;
  std::optional<TlsPaths> tls;
  std::optional<std::string> token_file;        // the token this agent presents to the controller
  std::optional<std::string> tokens_file;       // hashes of the tokens callers present (controller)
  std::optional<std::string> victim_user;       // user victims run as when the agent is root
  std::optional<std::string> victim_uid_range;  // "LO-HI": a uid per experiment (root agents)
  std::optional<std::string> victim_uid_lock_dir;           // where the range's uids are locked
  std::optional<std::string> victim_env;                    // clean | inherit
  std::optional<std::vector<std::string>> victim_env_keep;  // names passed on in clean mode
  std::optional<std::string> metrics_listen;                // Prometheus /metrics address
  std::optional<std::string> health_listen;            // plaintext port with only grpc.health.v1
  std::optional<std::string> log_level;                // debug | info | warn | error
  std::optional<std::string> log_format;               // text | json
  std::optional<std::vector<std::string>> unix_roles;  // "ROLE=WHO" (lib/rpc/local_roles.h)
  ConnectionConfig connections;
};

struct ControllerConfig {
  std::optional<std::string> listen;
  std::optional<std::string> database;  // SQLite file
  std::optional<double> lease_s;
  std::optional<double> heartbeat_interval_s;
  std::optional<TlsPaths> tls;
  std::optional<std::string> token_file;      // the token the controller presents to agents
  std::optional<std::string> tokens_file;     // hashes of the tokens callers present
  std::optional<std::string> metrics_listen;  // Prometheus /metrics address
  std::optional<std::string> health_listen;   // plaintext port with only grpc.health.v1
  std::optional<std::string> log_level;       // debug | info | warn | error
  std::optional<std::string> log_format;      // text | json
  std::optional<std::vector<std::string>> unix_roles;  // "ROLE=WHO" (lib/rpc/local_roles.h)
  ConnectionConfig connections;
  std::optional<bool> resume_interrupted;      // resume what a crash interrupted, at start
  std::optional<double> agent_rejoin_grace_s;  // wait this long after start for agents
};

// `filename` is used in messages and to resolve relative paths.
Result<AgentConfig> ParseAgentConfig(const std::string& text, const std::string& filename);
Result<ControllerConfig> ParseControllerConfig(const std::string& text,
                                               const std::string& filename);

// The file to read: `flag_value` when --config was given (it must exist), else `default_path`
// when it exists, else "" (no file: built-in defaults and flags only).
Result<std::string> ResolveConfigPath(const std::string& flag_value, bool flag_given,
                                      const std::string& default_path);

// Read and parse `path`; "" yields an empty config (every key unset).
Result<AgentConfig> LoadAgentConfig(const std::string& path);
Result<ControllerConfig> LoadControllerConfig(const std::string& path);

// A bearer token kept in a file: its content less surrounding whitespace; must not be empty.
Result<std::string> ReadTokenFile(const std::string& path);

// A secret (token file, tokens file, TLS private key) must be private: no group or other
// permission bits (a symlink, as in a Kubernetes Secret volume, is judged by its target), and
// owned by root or by this process's user. The error names the file, what it is, its mode or
// owner, and the fix (`chmod 600 FILE`). `what`: "token_file", "tokens_file", "TLS key".
Status CheckPrivateFile(const std::string& path, const std::string& what);

}  // namespace codl::daemon
