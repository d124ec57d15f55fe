// TelemetryHub: fans live telemetry (antagonist samples, victim steps) out to the
// StreamTelemetry subscribers whose trial id prefixes the event's id. Publish never blocks:
// subscribers queue what they receive (gRPC write reactors).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "codl/v1/agent.pb.h"

namespace codl::agent {

class TelemetryHub {
 public:
  using Subscriber = std::function<void(const v1::TelemetryEvent&)>;
  int Subscribe(const std::string& trial_id, Subscriber s) {
    std::lock_guard<std::mutex> l(mu_);
    subs_[next_] = {trial_id, std::move(s)};
    return next_++;
  }
  void Unsubscribe(int handle) {
    std::lock_guard<std::mutex> l(mu_);
    subs_.erase(handle);
  }
  // `id` is an antagonist id or a victim's trial id; delivered to every subscriber whose
  // trial id is a prefix of it.
  void Publish(const std::string& id, const v1::TelemetryEvent& ev) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [h, sub] : subs_) {
      if (!sub.first.empty() && id.rfind(sub.first, 0) == 0) sub.second(ev);
    }
  }

 private:
  std::mutex mu_;
  std::map<int, std::pair<std::string, Subscriber>> subs_;
  int next_ = 1;
};

}  // namespace codl::agent
