// LeaseMonitor: the agent's dead-man switch. Only the controller's heartbeat replies (and a
// successful registration) renew it — any other caller could otherwise keep antagonists alive
// with the controller gone; an antagonist started with lease L must stop once the controller
// has been silent for longer than L.
#pragma once

#include <mutex>

#include "lib/common/clock.h"

namespace codl::agent {

class LeaseMonitor {
 public:
  explicit LeaseMonitor(const Clock* clock)
      : clock_(clock), last_contact_s_(clock->MonotonicSeconds()) {}

  void Renew() {
    std::lock_guard<std::mutex> l(mu_);
    last_contact_s_ = clock_->MonotonicSeconds();
  }
  double SecondsSinceContact() const {
    std::lock_guard<std::mutex> l(mu_);
    return clock_->MonotonicSeconds() - last_contact_s_;
  }
  // True when a lease of `lease_s` has run out.
  bool Expired(double lease_s) const { return SecondsSinceContact() > lease_s; }

 private:
  const Clock* clock_;
  mutable std::mutex mu_;
  double last_contact_s_;
};

}  // namespace codl::agent
