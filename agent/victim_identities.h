// VictimIdentities: one uid/gid per experiment from the agent's `victim_uid_range`, so that the
// victims of two experiments (or two submitters) cannot signal, ptrace or read each other
// (docs/security.md, "Victim isolation").
// - An experiment takes a uid at its first victim and keeps it until the controller says it
//   ended (EndExperiment), or until it has run no victim for `idle_release_s` and another
//   experiment needs the uid (a controller that died never says so).
// - A uid is held host-wide by an flock on LOCK_DIR/UID, so agents sharing a host and a range
//   never hand out the same uid, and a killed agent's uids are free again at once.
// - Release kills every process whose real uid is the released one: the range is reserved for
//   CoDL (the agent refuses a range holding a user's uid), so these can only be victims' leftovers.
// - Uids are handed out round robin from the last one taken: a released uid is reused as late
//   as possible (files a victim left outside its HOME stay readable by that uid).
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>

#include "lib/common/clock.h"
#include "lib/common/result.h"
#include "lib/common/subprocess.h"

namespace codl::agent {

struct UidRange {
  uid_t lo = 0, hi = 0;  // inclusive
  size_t size() const { return static_cast<size_t>(hi - lo) + 1; }
};

class VictimIdentities {
 public:
  static constexpr const char* kDefaultLockDir = "/run/codl/victim-uids";
  static constexpr double kDefaultIdleReleaseS = 3600;

  // Creates lock_dir (0700) if needed. The agent must be root.
  static Result<std::unique_ptr<VictimIdentities>> Open(UidRange range, std::string lock_dir,
                                                        const Clock* clock, double idle_release_s);
  ~VictimIdentities();  // releases every uid it holds (and kills what runs as them)

  // The identity of `experiment_id`'s victims (taken now if it has none); paired with Done.
  // ResourceExhausted when every uid of the range is held by a live experiment.
  Result<RunAs> Acquire(const std::string& experiment_id);
  void Done(const std::string& experiment_id);
  // The experiment ended: its uid is released. Returns the processes killed (-1: it held none).
  int End(const std::string& experiment_id);

  // The uid held for `experiment_id`, 0 when none (tests and the log).
  uid_t UidOf(const std::string& experiment_id) const;
  const UidRange& range() const { return range_; }

 private:
  struct Held {
    uid_t uid = 0;
    int lock_fd = -1;
    int running = 0;         // victims now running
    double last_used_s = 0;  // monotonic, when the last one ended
  };
  VictimIdentities(UidRange range, std::string lock_dir, const Clock* clock, double idle_s)
      : range_(range), lock_dir_(std::move(lock_dir)), clock_(clock), idle_release_s_(idle_s) {}
  // A free uid's lock, or -1 when none is free (mu_ held).
  int TakeFreeUid(uid_t* uid);
  int ReleaseLocked(const std::string& experiment_id);
  void ReleaseIdleLocked(bool all_idle);

  const UidRange range_;
  const std::string lock_dir_;
  const Clock* clock_;
  const double idle_release_s_;
  mutable std::mutex mu_;
  std::map<std::string, Held> held_;
  uid_t next_ = 0;  // where the round robin goes on
};

// SIGKILLs every process whose real uid is `uid`, until none is left (at most a few rounds: a
// dying process may fork). Returns how many it signalled.
int KillProcessesOfUid(uid_t uid);

}  // namespace codl::agent
