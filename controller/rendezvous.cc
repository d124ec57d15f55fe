#include "controller/rendezvous.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace codl::controller {

std::string NewRendezvousScope(const std::string& trial_id) {
  std::random_device rd;  // getrandom(2): unpredictable, unlike a seeded generator
  std::string scope = trial_id + ".";
  for (int i = 0; i < 4; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    scope += buf;
  }
  return scope;
}

void RendezvousGrants::Grant(const std::string& scope, std::set<std::string> agent_ids) {
  std::lock_guard<std::mutex> l(mu_);
  scopes_[scope] = std::move(agent_ids);
}

void RendezvousGrants::Revoke(const std::string& scope) {
  std::lock_guard<std::mutex> l(mu_);
  scopes_.erase(scope);
}

std::optional<std::set<std::string>> RendezvousGrants::AgentsFor(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  // The scope is everything before a '/'; trying each '/' keeps this right whatever ids hold.
  for (size_t slash = key.find('/'); slash != std::string::npos; slash = key.find('/', slash + 1)) {
    auto it = scopes_.find(key.substr(0, slash));
    if (it != scopes_.end()) return it->second;
  }
  return std::nullopt;
}

Rendezvous::Rendezvous(const Clock* clock, RendezvousLimits limits, bool sweep_thread)
    : clock_(clock), limits_(limits) {
  if (!sweep_thread) return;
  sweeper_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
      stop_cv_.wait_for(l, std::chrono::milliseconds(50));
      l.unlock();
      Sweep();
      l.lock();
    }
  });
}

Rendezvous::~Rendezvous() { Close(); }

void Rendezvous::Close() {
  std::multimap<std::string, Waiter> waiters;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    waiters.swap(waiters_);
  }
  stop_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  for (auto& [key, w] : waiters) w.done(std::nullopt);
}

Status Rendezvous::CheckKey(const std::string& key) const {
  if (key.empty()) return InvalidArgument("rendezvous key is empty");
  if (key.size() > limits_.max_key_bytes) {
    return InvalidArgument("rendezvous key is longer than " +
                           std::to_string(limits_.max_key_bytes) + " bytes");
  }
  return Status::Ok();
}

Status Rendezvous::Publish(const std::string& key, const std::string& value) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() > limits_.max_value_bytes) {
    return InvalidArgument("rendezvous value for '" + key + "' is " + std::to_string(value.size()) +
                           " bytes (limit " + std::to_string(limits_.max_value_bytes) + ")");
  }
  std::vector<Done> ready;
  {
    std::lock_guard<std::mutex> l(mu_);
    const double now = clock_->MonotonicSeconds();
    auto it = values_.find(key);
    if (it != values_.end() && it->second.expires_s >= now) {
      if (it->second.bytes == value) return Status::Ok();  // a retried publish
      return AlreadyExists("rendezvous key '" + key + "' already holds a value (write-once)");
    }
    if (it == values_.end() && values_.size() >= limits_.max_entries) {
      return ResourceExhausted("the rendezvous board is full (" +
                               std::to_string(limits_.max_entries) + " keys)");
    }
    values_[key] = Value{value, now + limits_.ttl_s};
    auto [first, last] = waiters_.equal_range(key);
    for (auto w = first; w != last; ++w) ready.push_back(std::move(w->second.done));
    waiters_.erase(first, last);
  }
  for (auto& done : ready) done(value);
  return Status::Ok();
}

Status Rendezvous::Fetch(const std::string& key, double wait_s, Done done) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (!std::isfinite(wait_s)) return InvalidArgument("rendezvous wait_s is not a finite number");
  std::optional<std::string> now_value;
  {
    std::lock_guard<std::mutex> l(mu_);
    const double now = clock_->MonotonicSeconds();
    auto it = values_.find(key);
    if (it != values_.end() && it->second.expires_s >= now) {
      now_value = it->second.bytes;
    } else if (wait_s > 0 && !stopping_) {
      if (waiters_.size() >= limits_.max_waiters) {
        return ResourceExhausted("too many rendezvous fetches are waiting (" +
                                 std::to_string(limits_.max_waiters) + ")");
      }
      waiters_.emplace(key,
                       Waiter{key, now + std::min(wait_s, limits_.max_wait_s), std::move(done)});
      return Status::Ok();
    }
  }
  done(std::move(now_value));
  return Status::Ok();
}

void Rendezvous::Sweep() {
  std::vector<Done> expired;
  {
    std::lock_guard<std::mutex> l(mu_);
    const double now = clock_->MonotonicSeconds();
    for (auto it = values_.begin(); it != values_.end();) {
      it = it->second.expires_s < now ? values_.erase(it) : std::next(it);
    }
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second.deadline_s <= now) {
        expired.push_back(std::move(it->second.done));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& done : expired) done(std::nullopt);
}

size_t Rendezvous::Entries() const {
  std::lock_guard<std::mutex> l(mu_);
  return values_.size();
}

size_t Rendezvous::Waiters() const {
  std::lock_guard<std::mutex> l(mu_);
  return waiters_.size();
}

}  // namespace codl::controller
