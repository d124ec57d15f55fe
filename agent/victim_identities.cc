#include "agent/victim_identities.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

namespace codl::agent {
namespace {

// The real uid of `pid` (the Uid: line of /proc/PID/status), or -1 when it is gone or a zombie
// (dead already: its parent reaps it).
int64_t RealUidOf(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0 && line.find('Z') != std::string::npos) return -1;
    if (line.rfind("Uid:", 0) == 0) return std::strtoll(line.c_str() + 4, nullptr, 10);
  }
  return -1;
}

}  // namespace

int KillProcessesOfUid(uid_t uid) {
  int killed = 0;
  for (int round = 0; round < 20; ++round) {
    DIR* d = opendir("/proc");
    if (d == nullptr) return killed;
    int found = 0;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      if (RealUidOf(e->d_name) != static_cast<int64_t>(uid)) continue;
      const pid_t pid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
      if (kill(pid, SIGKILL) == 0) ++found;
    }
    closedir(d);
    killed += found;
    if (found == 0) break;
    usleep(20'000);  // let them die (a zombie's status still names the uid until it is reaped)
  }
  return killed;
}

Result<std::unique_ptr<VictimIdentities>> VictimIdentities::Open(UidRange range,
                                                                 std::string lock_dir,
                                                                 const Clock* clock,
                                                                 double idle_release_s) {
  if (range.lo == 0 || range.hi < range.lo) return InvalidArgument("victim_uid_range is empty");
  std::error_code ec;
  std::filesystem::create_directories(lock_dir, ec);
  struct stat st {};
  if (lstat(lock_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Err("victim_uid_range: cannot create its lock directory " + lock_dir + ": " +
               (ec ? ec.message() : std::string(std::strerror(errno))));
  }
  if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    return PermissionDenied("victim_uid_range: the lock directory " + lock_dir +
                            " must be owned by this agent's user and not writable by others");
  }
  chmod(lock_dir.c_str(), 0700);
  std::unique_ptr<VictimIdentities> v(
      new VictimIdentities(range, std::move(lock_dir), clock, idle_release_s));
  v->next_ = range.lo;
  return v;
}

VictimIdentities::~VictimIdentities() {
  std::lock_guard<std::mutex> l(mu_);
  while (!held_.empty()) ReleaseLocked(held_.begin()->first);
}

int VictimIdentities::TakeFreeUid(uid_t* uid) {
  for (size_t i = 0; i < range_.size(); ++i) {
    const uid_t u = next_;
    next_ = next_ == range_.hi ? range_.lo : next_ + 1;
    bool mine = false;
    for (const auto& [id, h] : held_) mine |= h.uid == u;
    if (mine) continue;
    const std::string path = lock_dir_ + "/" + std::to_string(u);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {  // another agent on this host holds it
      close(fd);
      continue;
    }
    *uid = u;
    return fd;
  }
  return -1;
}

void VictimIdentities::ReleaseIdleLocked(bool all_idle) {
  const double now = clock_->MonotonicSeconds();
  for (auto it = held_.begin(); it != held_.end();) {
    const Held& h = it->second;
    const bool idle = h.running == 0 && (all_idle || now - h.last_used_s >= idle_release_s_);
    const std::string id = it->first;
    ++it;
    if (idle) {
      spdlog::info("victim uid {} of experiment {} released: no victim of it for {:.0f} s", h.uid,
                   id, now - h.last_used_s);
      ReleaseLocked(id);
    }
  }
}

Result<RunAs> VictimIdentities::Acquire(const std::string& experiment_id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = held_.find(experiment_id);
  if (it == held_.end()) {
    ReleaseIdleLocked(false);
    uid_t uid = 0;
    int fd = TakeFreeUid(&uid);
    if (fd < 0) {  // all taken: the longest idle experiment of this agent gives its uid back
      ReleaseIdleLocked(true);
      fd = TakeFreeUid(&uid);
    }
    if (fd < 0) {
      return ResourceExhausted("all " + std::to_string(range_.size()) +
                               " uids of victim_uid_range " + std::to_string(range_.lo) + "-" +
                               std::to_string(range_.hi) +
                               " are held by running experiments (on this host): widen the range");
    }
    // Whatever a crashed agent left running as this uid is not the new experiment's.
    if (int n = KillProcessesOfUid(uid); n > 0)
      spdlog::warn("victim uid {}: killed {} leftover processes before reuse", uid, n);
    it = held_.emplace(experiment_id, Held{uid, fd, 0, 0}).first;
    spdlog::info("experiment {}: victims run as uid {}", experiment_id, uid);
  }
  ++it->second.running;
  const uid_t uid = it->second.uid;
  return RunAs{uid, static_cast<gid_t>(uid), {}, "uid " + std::to_string(uid)};
}

void VictimIdentities::Done(const std::string& experiment_id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = held_.find(experiment_id);
  if (it == held_.end()) return;
  if (it->second.running > 0) --it->second.running;
  it->second.last_used_s = clock_->MonotonicSeconds();
}

int VictimIdentities::ReleaseLocked(const std::string& experiment_id) {
  auto it = held_.find(experiment_id);
  if (it == held_.end()) return -1;
  const int killed = KillProcessesOfUid(it->second.uid);
  if (killed > 0) {
    spdlog::info("victim uid {} of experiment {}: killed {} processes at release", it->second.uid,
                 experiment_id, killed);
  }
  close(it->second.lock_fd);  // after the kill: the uid is free only once nothing runs as it
  held_.erase(it);
  return killed;
}

int VictimIdentities::End(const std::string& experiment_id) {
  std::lock_guard<std::mutex> l(mu_);
  return ReleaseLocked(experiment_id);
}

uid_t VictimIdentities::UidOf(const std::string& experiment_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = held_.find(experiment_id);
  return it == held_.end() ? 0 : it->second.uid;
}

}  // namespace codl::agent
