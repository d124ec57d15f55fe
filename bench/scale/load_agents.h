// codl-load-agents: N lightweight agents speaking the real agent protocol (register, heartbeat,
// the Agent service on N loopback ports) against one codl-controller; spawns nothing.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/common/result.h"
#include "lib/common/tunables.h"
#include "lib/rpc/rpc_util.h"

namespace codl::bench {

struct LoadOptions {
  std::string controller = codl::tunables::kDefaultControllerAddress;
  int agents = 100;
  std::string listen_host = "127.0.0.1";
  std::string id_prefix = "load-";
  double duration_s = 0;  // 0: until SIGINT/SIGTERM
  double victim_s = 0.1;
  double register_spread_s = 2;
  std::string out;
  codl::rpc::TlsFiles tls;
  int min_connect_timeout_ms = 2000;  // rpc::MakeChannel's GRPC_ARG_MIN_RECONNECT_BACKOFF_MS
  double setup_estimate_s = 0;        // EstimateSetup's answer
};

class LoadAgents {
 public:
  virtual ~LoadAgents();
  virtual codl::Status Start() = 0;
  virtual void Shutdown() = 0;
  virtual int Registered() const = 0;
  virtual nlohmann::json Report() = 0;  // start arrivals, heartbeat statistics
};

std::unique_ptr<LoadAgents> MakeLoadAgents(const LoadOptions& o);

}  // namespace codl::bench
