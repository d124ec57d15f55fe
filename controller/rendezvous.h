// Rendezvous: a key -> opaque bytes board with waiting fetches. Relays e.g. NCCL's ncclUniqueId
// from rank 0 to the other ranks through the controller, so collectives span nodes without MPI.
//
// Bounds (security issue, item 4): a value is write-once (a second publisher cannot redirect the
// ranks to its own communicator), keys and values are size-capped, entries expire after a TTL
// and their number is capped, and a fetch never holds a thread while it waits: its callback
// runs when the key is published or, at the latest, when its deadline passes (Sweep).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lib/common/clock.h"
#include "lib/common/result.h"

namespace codl::controller {

struct RendezvousLimits {
  size_t max_key_bytes = 512;
  size_t max_value_bytes = 64 * 1024;  // an ncclUniqueId is 128 bytes
  size_t max_entries = 4096;
  size_t max_waiters = 4096;
  double ttl_s = 900;      // a value is forgotten this long after it was published
  double max_wait_s = 60;  // a fetch waits at most this long
};

// The scope (key prefix) of one trial's rendezvous keys: the trial id plus 128 random bits, so
// a key is known only to the agents the trial's StartAntagonist calls reach, and nobody can
// claim it in advance (values are write-once).
std::string NewRendezvousScope(const std::string& trial_id);

// Which agents may use a trial's rendezvous keys ("SCOPE/NAME"): while a trial runs, its scope is
// granted to the agents placed in it (ScopedRendezvousGrant); the controller refuses a publish
// or fetch from any other agent, and any key outside every granted scope. Thread-safe.
class RendezvousGrants {
 public:
  void Grant(const std::string& scope, std::set<std::string> agent_ids);
  void Revoke(const std::string& scope);
  // The agents granted the scope that `key` lies in; nullopt when no running trial owns it.
  std::optional<std::set<std::string>> AgentsFor(const std::string& key) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::set<std::string>> scopes_;
};

// Grants `scope` for the lifetime of this object (one trial's run).
class ScopedRendezvousGrant {
 public:
  ScopedRendezvousGrant(RendezvousGrants* grants, std::string scope,
                        std::set<std::string> agent_ids)
      : grants_(grants), scope_(std::move(scope)) {
    grants_->Grant(scope_, std::move(agent_ids));
  }
  ~ScopedRendezvousGrant() { grants_->Revoke(scope_); }
  ScopedRendezvousGrant(const ScopedRendezvousGrant&) = delete;
  ScopedRendezvousGrant& operator=(const ScopedRendezvousGrant&) = delete;

 private:
  RendezvousGrants* grants_;
  std::string scope_;
};

class Rendezvous {
 public:
  // found: the value, or nullopt when the wait ended without one (deadline or shutdown).
  using Done = std::function<void(std::optional<std::string> found)>;

  // sweep_thread: run Sweep every 50 ms on a thread of its own (tests with a FakeClock pass
  // false and call Sweep themselves).
  explicit Rendezvous(const Clock* clock, RendezvousLimits limits = {}, bool sweep_thread = true);
  ~Rendezvous();  // Close()
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // AlreadyExists when the key holds another value (the same value again is fine: a retry).
  Status Publish(const std::string& key, const std::string& value);
  // Calls `done` exactly once, never with the rendezvous' lock held: now when the key is there
  // (or wait_s <= 0), else later from Publish or Sweep. Errors (bad key, too many waiters) are
  // returned and `done` is not called.
  Status Fetch(const std::string& key, double wait_s, Done done);
  // Completes every waiter with nullopt and refuses new waits (shutdown).
  void Close();
  // Drops expired values and completes waiters whose deadline passed.
  void Sweep();
  size_t Entries() const;
  size_t Waiters() const;

 private:
  struct Value {
    std::string bytes;
    double expires_s = 0;
  };
  struct Waiter {
    std::string key;
    double deadline_s = 0;
    Done done;
  };
  Status CheckKey(const std::string& key) const;

  const Clock* clock_;
  RendezvousLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Value> values_;
  std::multimap<std::string, Waiter> waiters_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;
  std::thread sweeper_;
};

}  // namespace codl::controller
