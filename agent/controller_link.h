// ControllerLink: the agent's side of registration and heartbeats. Each successful heartbeat
// renews the lease; a heartbeat round trip gives an NTP-style clock offset sample.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/lease_monitor.h"
#include "lib/common/clock.h"
#include "lib/common/tunables.h"
#include "lib/rpc/rpc_util.h"

namespace codl::v1 {
class Controller;
}

namespace codl::agent {

class ControllerLink {
 public:
  struct Options {
    rpc::Endpoint controller;
    std::string agent_id;
    std::string advertise;
    std::map<std::string, std::string> labels;
    double heartbeat_interval_s = tunables::kDefaultHeartbeatIntervalS;
  };
  ControllerLink(Options options, LeaseMonitor* lease, const Clock* clock,
                 std::function<int()> running_antagonists);
  ~ControllerLink();
  Status Start();
  void Stop();
  bool registered() const { return registered_.load(); }
  // The rendezvous relay through the controller (opaque bytes under a key).
  Status PublishRendezvous(const std::string& key, const std::string& value);
  Result<std::string> FetchRendezvous(const std::string& key, double wait_s);

 private:
  void Loop();
  bool Register();
  bool Heartbeat();

  Options options_;
  LeaseMonitor* lease_;
  const Clock* clock_;
  std::function<int()> running_antagonists_;
  std::shared_ptr<void> stub_holder_;  // codl::v1::Controller::Stub, type-erased
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> registered_{false};
  double last_rtt_s_ = 0;
  double last_offset_s_ = 0;
  bool warned_ = false;
  // Random, once per link (one per agent process): the controller refuses a second live agent
  // with this agent's id by it (RegisterAgentRequest.session_id).
  const std::string session_id_ = rpc::NewIdempotencyKey();
};

}  // namespace codl::agent
