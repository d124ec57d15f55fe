// ParseAgentConfig / ParseControllerConfig: the key tables of the two daemons' config files.
#include "lib/daemon/daemon_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lib/common/read_file.h"
#include "lib/common/tunables.h"
#include "lib/daemon/logging.h"
#include "lib/daemon/victim_user.h"
#include "lib/daemon/yaml_reader.h"

namespace codl::daemon {
namespace {

using internal::Fail;
using internal::MapReader;

// Relative paths in a file are relative to the file's directory, not to the daemon's working
// directory (which is "/" under systemd).
std::string Anchor(const std::string& path, const std::string& filename) {
  if (path.empty() || path[0] == '/') return path;
  size_t slash = filename.rfind('/');
  return slash == std::string::npos ? path : filename.substr(0, slash + 1) + path;
}

TlsPaths AnchorTls(TlsPaths t, const std::string& filename) {
  t.ca = Anchor(t.ca, filename);
  t.cert = Anchor(t.cert, filename);
  t.key = Anchor(t.key, filename);
  return t;
}

void CheckHeartbeatBelowLease(const MapReader& m, std::optional<double> heartbeat,
                              std::optional<double> lease) {
  if (heartbeat && lease && *heartbeat >= *lease) {
    Fail(m.Value("heartbeat_interval"), "heartbeat_interval",
         "must be shorter than lease (" + m.Value("lease").Scalar() +
             "), or every lease would expire between two heartbeats");
  }
}

Result<std::string> ReadWholeFile(const std::string& path, const char* what) {
  std::optional<std::string> text = ReadFileText(path);
  if (!text) return Err(std::string(what) + " " + path + ": cannot open: " + strerror(errno));
  return std::move(*text);
}

// Keys both daemons have (lease, heartbeat_interval, tls, token_file, tokens_file,
// metrics_listen, health_listen, log_level, log_format): one reader, so the two config files
// cannot drift apart.
template <class Config>
void ReadSharedKeys(const MapReader& m, const std::string& filename, Config* c) {
  if (m.Has("lease")) c->lease_s = yaml::Duration(m.Value("lease"), "lease", /*positive=*/true);
  if (m.Has("heartbeat_interval")) {
    c->heartbeat_interval_s =
        yaml::Duration(m.Value("heartbeat_interval"), "heartbeat_interval", /*positive=*/true);
  }
  // Lower bounds (security issue, item 3): a lease shorter than a second stops antagonists on
  // any hiccup; a heartbeat faster than 20 Hz per agent is load, not liveness.
  if (c->lease_s && *c->lease_s < tunables::kMinLeaseS) {
    Fail(m.Value("lease"), "lease",
         "must be at least " + tunables::DurationFlagText(tunables::kMinLeaseS));
  }
  if (c->heartbeat_interval_s && *c->heartbeat_interval_s < tunables::kMinHeartbeatIntervalS) {
    Fail(m.Value("heartbeat_interval"), "heartbeat_interval", "must be at least 50ms");
  }
  CheckHeartbeatBelowLease(m, c->heartbeat_interval_s, c->lease_s);
  if (m.Has("tls")) c->tls = AnchorTls(internal::Tls(m.Value("tls"), "tls"), filename);
  if (m.Has("token_file"))
    c->token_file = Anchor(internal::FilePath(m.Value("token_file"), "token_file"), filename);
  if (m.Has("tokens_file"))
    c->tokens_file = Anchor(internal::FilePath(m.Value("tokens_file"), "tokens_file"), filename);
  if (m.Has("metrics_listen")) {
    c->metrics_listen = internal::Address(m.Value("metrics_listen"), "metrics_listen", 0);
  }
  if (m.Has("health_listen"))
    c->health_listen = internal::Address(m.Value("health_listen"), "health_listen", 0);
  if (m.Has("log_level")) {
    c->log_level = yaml::NonEmptyString(m.Value("log_level"), "log_level");
    if (!ValidLogLevel(*c->log_level))
      Fail(m.Value("log_level"), "log_level", "expected debug, info, warn or error");
  }
  if (m.Has("log_format")) {
    c->log_format = yaml::NonEmptyString(m.Value("log_format"), "log_format");
    if (!ValidLogFormat(*c->log_format))
      Fail(m.Value("log_format"), "log_format", "expected text or json");
  }
  if (m.Has("max_connections")) {
    c->connections.max_connections =
        yaml::Integer(m.Value("max_connections"), "max_connections", 1, 1 << 20);
  }
  if (m.Has("max_calls")) {
    c->connections.max_calls = yaml::Integer(m.Value("max_calls"), "max_calls", 1, 1 << 20);
  }
  if (m.Has("max_calls_per_caller")) {
    c->connections.max_calls_per_caller =
        yaml::Integer(m.Value("max_calls_per_caller"), "max_calls_per_caller", 1, 1 << 20);
  }
  if (m.Has("max_connections_per_caller")) {
    c->connections.max_connections_per_caller = yaml::Integer(
        m.Value("max_connections_per_caller"), "max_connections_per_caller", 1, 1 << 20);
  }
  if (m.Has("idle_timeout")) {
    c->connections.idle_timeout_s =
        yaml::Duration(m.Value("idle_timeout"), "idle_timeout", /*positive=*/true);
  }
  if (m.Has("max_unauthenticated_connections")) {
    c->connections.max_unauthenticated_connections = yaml::Integer(
        m.Value("max_unauthenticated_connections"), "max_unauthenticated_connections", 1, 1 << 20);
  }
  if (m.Has("max_unauthenticated_connections_per_ip")) {
    c->connections.max_unauthenticated_connections_per_ip =
        yaml::Integer(m.Value("max_unauthenticated_connections_per_ip"),
                      "max_unauthenticated_connections_per_ip", 1, 1 << 20);
  }
  if (m.Has("handshake_timeout")) {
    const double s =
        yaml::Duration(m.Value("handshake_timeout"), "handshake_timeout", /*positive=*/true);
    if (s < 1 || s > 3600) {
      Fail(m.Value("handshake_timeout"), "handshake_timeout", "must be in [1s, 1h]");
    }
    c->connections.handshake_timeout_s = s;
  }
  // Checked (and names resolved) by rpc::LocalRoles::Parse at start; here: a list of "ROLE=WHO".
  if (m.Has("unix_roles")) {
    c->unix_roles = yaml::StringList(m.Value("unix_roles"), "unix_roles");
    for (const std::string& e : *c->unix_roles) {
      if (e.find('=') == std::string::npos) {
        Fail(m.Value("unix_roles"), "unix_roles", "'" + e + "': expected ROLE=WHO");
      }
    }
  }
}

// Who victims run as and in what environment: victim_user or victim_uid_range (exclusive),
// victim_uid_lock_dir, victim_env, victim_env_keep.
void ReadVictimKeys(const MapReader& m, const std::string& filename, AgentConfig* out) {
  AgentConfig& c = *out;
  if (m.Has("victim_user"))
    c.victim_user = yaml::NonEmptyString(m.Value("victim_user"), "victim_user");
  if (m.Has("victim_uid_range")) {
    c.victim_uid_range = yaml::NonEmptyString(m.Value("victim_uid_range"), "victim_uid_range");
    if (auto r = ParseUidRange(*c.victim_uid_range); !r.ok())
      Fail(m.Value("victim_uid_range"), "victim_uid_range", r.error());
    if (c.victim_user) {
      Fail(m.Value("victim_uid_range"), "victim_uid_range",
           "victim_user and victim_uid_range are exclusive: choose one");
    }
  }
  if (m.Has("victim_uid_lock_dir")) {
    c.victim_uid_lock_dir = Anchor(
        internal::AbsolutePath(m.Value("victim_uid_lock_dir"), "victim_uid_lock_dir"), filename);
  }
  if (m.Has("victim_env")) {
    c.victim_env = yaml::NonEmptyString(m.Value("victim_env"), "victim_env");
    if (*c.victim_env != "clean" && *c.victim_env != "inherit")
      Fail(m.Value("victim_env"), "victim_env",
           "'" + *c.victim_env + "': expected clean or inherit");
  }
  if (m.Has("victim_env_keep")) {
    c.victim_env_keep = yaml::StringList(m.Value("victim_env_keep"), "victim_env_keep");
    for (const std::string& name : *c.victim_env_keep) {
      if (!IsEnvName(name))
        Fail(m.Value("victim_env_keep"), "victim_env_keep", "'" + name + "': not a variable name");
    }
  }
}

}  // namespace

Result<AgentConfig> ParseAgentConfig(const std::string& text, const std::string& filename) {
  AgentConfig c;
  Status s = internal::ParseConfigText(text, filename, [&](const YAML::Node& root) {
    MapReader m(root, "",
                {"controller",
                 "listen",
                 "advertise",
                 "id",
                 "labels",
                 "scratch_roots",
                 "cache_roots",
                 "cache_max_bytes",
                 "cache_max_time",
                 "allow_victim",
                 "max_level",
                 "lease",
                 "heartbeat_interval",
                 "state_dir",
                 "tls",
                 "token_file",
                 "tokens_file",
                 "victim_user",
                 "metrics_listen",
                 "health_listen",
                 "log_level",
                 "log_format",
                 "unix_roles",
                 "max_connections",
                 "max_connections_per_caller",
                 "max_calls",
                 "max_calls_per_caller",
                 "idle_timeout",
                 "max_unauthenticated_connections",
                 "max_unauthenticated_connections_per_ip",
                 "handshake_timeout",
                 "victim_uid_range",
                 "victim_env",
                 "victim_env_keep",
                 "victim_uid_lock_dir"});
    if (m.Has("controller"))
      c.controller = internal::Address(m.Value("controller"), "controller", 1);
    if (m.Has("listen")) c.listen = internal::Address(m.Value("listen"), "listen", 0);
    if (m.Has("advertise")) c.advertise = internal::Address(m.Value("advertise"), "advertise", 1);
    if (m.Has("id")) c.id = yaml::NonEmptyString(m.Value("id"), "id");
    if (m.Has("labels")) c.labels = internal::Labels(m.Value("labels"), "labels");
    if (m.Has("scratch_roots")) {
      c.scratch_roots = internal::AbsolutePathList(m.Value("scratch_roots"), "scratch_roots");
    }
    if (m.Has("cache_roots")) {
      c.cache_roots = internal::AbsolutePathList(m.Value("cache_roots"), "cache_roots");
    }
    if (m.Has("cache_max_bytes")) {
      c.cache_max_bytes = yaml::Size(m.Value("cache_max_bytes"), "cache_max_bytes");
      if (*c.cache_max_bytes < (1u << 20)) {
        Fail(m.Value("cache_max_bytes"), "cache_max_bytes", "must be at least 1MiB");
      }
    }
    if (m.Has("cache_max_time")) {
      c.cache_max_time_s = yaml::Duration(m.Value("cache_max_time"), "cache_max_time", true);
    }
    ReadVictimKeys(m, filename, &c);
    if (m.Has("allow_victim")) c.allow_victim = yaml::Bool(m.Value("allow_victim"), "allow_victim");
    if (m.Has("max_level")) {
      double v = yaml::Number(m.Value("max_level"), "max_level");
      if (!(v > 0 && v <= 1)) Fail(m.Value("max_level"), "max_level", "must be in (0, 1]");
      c.max_level = v;
    }
    ReadSharedKeys(m, filename, &c);
    if (m.Has("state_dir"))
      c.state_dir = Anchor(internal::FilePath(m.Value("state_dir"), "state_dir"), filename);
  });
  if (!s.ok()) return s;
  return c;
}

Result<ControllerConfig> ParseControllerConfig(const std::string& text,
                                               const std::string& filename) {
  ControllerConfig c;
  Status s = internal::ParseConfigText(text, filename, [&](const YAML::Node& root) {
    MapReader m(root, "",
                {"listen",
                 "database",
                 "lease",
                 "heartbeat_interval",
                 "tls",
                 "token_file",
                 "tokens_file",
                 "metrics_listen",
                 "health_listen",
                 "log_level",
                 "log_format",
                 "unix_roles",
                 "resume_interrupted",
                 "agent_rejoin_grace",
                 "max_connections",
                 "max_connections_per_caller",
                 "idle_timeout",
                 "max_calls",
                 "max_calls_per_caller",
                 "max_unauthenticated_connections",
                 "max_unauthenticated_connections_per_ip",
                 "handshake_timeout"});
    if (m.Has("listen")) c.listen = internal::Address(m.Value("listen"), "listen", 0);
    if (m.Has("resume_interrupted"))
      c.resume_interrupted = yaml::Bool(m.Value("resume_interrupted"), "resume_interrupted");
    if (m.Has("agent_rejoin_grace")) {
      c.agent_rejoin_grace_s =
          yaml::Duration(m.Value("agent_rejoin_grace"), "agent_rejoin_grace", /*positive=*/false);
    }
    if (m.Has("database"))
      c.database = Anchor(internal::FilePath(m.Value("database"), "database"), filename);
    ReadSharedKeys(m, filename, &c);
  });
  if (!s.ok()) return s;
  return c;
}

Result<std::string> ResolveConfigPath(const std::string& flag_value, bool flag_given,
                                      const std::string& default_path) {
  struct stat st;
  if (flag_given) {
    if (flag_value.empty()) return Err("--config: empty path");
    if (stat(flag_value.c_str(), &st) != 0) {
      return Err("--config " + flag_value + ": " + strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) return Err("--config " + flag_value + ": is a directory");
    return flag_value;
  }
  return stat(default_path.c_str(), &st) == 0 ? default_path : std::string();
}

Result<AgentConfig> LoadAgentConfig(const std::string& path) {
  if (path.empty()) return AgentConfig{};
  auto text = ReadWholeFile(path, "config");
  if (!text.ok()) return text.status();
  return ParseAgentConfig(*text, path);
}

Result<ControllerConfig> LoadControllerConfig(const std::string& path) {
  if (path.empty()) return ControllerConfig{};
  auto text = ReadWholeFile(path, "config");
  if (!text.ok()) return text.status();
  return ParseControllerConfig(*text, path);
}

Result<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadWholeFile(path, "token file");
  if (!text.ok()) return text.status();
  const char* ws = " \t\r\n";
  size_t b = text->find_first_not_of(ws);
  if (b == std::string::npos) return Err("token file " + path + " is empty");
  size_t e = text->find_last_not_of(ws);
  return text->substr(b, e - b + 1);
}

Status CheckPrivateFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return InvalidArgument(what + " " + path + ": " + strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument(
        what + " " + path + " has mode " + mode + ": " +
        ((st.st_mode & 044) ? "other users can read it" : "others can change it") +
        "; a secret must be private: chmod 600 " + path);
  }
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    return InvalidArgument(what + " " + path + " is owned by uid " + std::to_string(st.st_uid) +
                           ", neither root nor this daemon's user (uid " +
                           std::to_string(geteuid()) + "), who could replace it: chown " +
                           std::to_string(geteuid()) + " " + path);
  }
  return Status::Ok();
}

}  // namespace codl::daemon
