#include "agent/subreaper.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

namespace codl::agent {
namespace {

struct State {
  std::mutex fork_mu;  // LockForks
  std::mutex mu;       // the sets below
  std::set<pid_t> own;
  std::set<std::string> live_tags;
  std::map<pid_t, uint64_t> adopted;
  std::atomic<bool> enabled{false};
  std::atomic<uint64_t> seq{0};
};

State& S() {
  static State* s = new State();  // leaked on purpose: the sweep thread outlives main's statics
  return *s;
}

struct OrphanStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  uint64_t start_ticks = 0;
};

std::optional<OrphanStat> ReadStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t rp = line.rfind(')');  // comm may hold spaces and parentheses
  if (rp == std::string::npos || rp + 2 > line.size()) return std::nullopt;
  std::istringstream rest(line.substr(rp + 2));
  OrphanStat st;
  std::string skip;
  rest >> st.state >> st.ppid >> st.pgrp;
  for (int field = 6; field <= 21; ++field) rest >> skip;  // session .. itrealvalue
  rest >> st.start_ticks;
  if (!rest) return std::nullopt;
  return st;
}

// CODL_AGENT_CHILD from the process' environment as it was at exec; "" when absent or
// unreadable.
std::string TagOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string prefix = std::string(kChildTagEnv) + "=";
  std::string var;
  while (std::getline(in, var, '\0')) {
    if (var.compare(0, prefix.size(), prefix) == 0) return var.substr(prefix.size());
  }
  return "";
}

// SIGKILL to a process, and to its group when it leads one (a setsid daemon's own helpers). A
// group it merely joined may be anyone's, so that is never signalled as a whole.
void KillOrphan(pid_t pid, const OrphanStat& st) { kill(st.pgrp == pid ? -pid : pid, SIGKILL); }

// Reaps a killed orphan, waiting at most ~1 s (SIGKILL lands at once unless the process sits in
// an uninterruptible sleep; the sweep thread reaps it later then).
void Reap(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    const pid_t r = waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool Keep(const std::string& tag) {
  std::lock_guard<std::mutex> l(S().mu);
  if (tag.empty()) return !S().live_tags.empty();
  return S().live_tags.count(tag) > 0;
}

bool IsOwn(pid_t pid) {
  std::lock_guard<std::mutex> l(S().mu);
  return S().own.count(pid) > 0;
}

}  // namespace

Status EnableSubreaper() {
  if (S().enabled.load()) return Status::Ok();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return Err(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + strerror(errno));
  }
  if (S().enabled.exchange(true)) return Status::Ok();
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      SweepOrphans();
    }
  }).detach();
  return Status::Ok();
}

bool SubreaperEnabled() { return S().enabled.load(); }

std::unique_lock<std::mutex> LockForks() { return std::unique_lock<std::mutex>(S().fork_mu); }

std::string NewChildTag() { return std::to_string(getpid()) + "." + std::to_string(++S().seq); }

void RegisterChild(pid_t pid, const std::string& tag) {
  std::lock_guard<std::mutex> l(S().mu);
  S().own.insert(pid);
  S().live_tags.insert(tag);
}

void ForgetChild(pid_t pid) {
  std::lock_guard<std::mutex> l(S().mu);
  S().own.erase(pid);
}

void ReleaseTag(const std::string& tag) {
  {
    std::lock_guard<std::mutex> l(S().mu);
    if (S().live_tags.erase(tag) == 0) return;
  }
  SweepOrphans();
}

std::vector<std::pair<pid_t, uint64_t>> AdoptedOrphans() {
  std::lock_guard<std::mutex> l(S().mu);
  return {S().adopted.begin(), S().adopted.end()};
}

int SweepOrphans() {
  if (!SubreaperEnabled()) return 0;  // elsewhere, children we did not start are not ours
  auto forks = LockForks();
  const pid_t self = getpid();
  std::map<pid_t, uint64_t> adopted;
  std::vector<pid_t> killed;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* e = readdir(proc)) {
      char* end = nullptr;
      const long pid = strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0' || IsOwn(pid)) continue;
      auto st = ReadStat(pid);
      if (!st || st->ppid != self) continue;
      if (st->state == 'Z') {
        waitpid(pid, nullptr, WNOHANG);
        continue;
      }
      if (Keep(TagOf(pid))) {
        adopted[pid] = st->start_ticks;
        continue;
      }
      KillOrphan(pid, *st);
      killed.push_back(pid);
    }
    closedir(proc);
  }
  for (pid_t pid : killed) {
    spdlog::info("killed pid {}: a daemonized descendant of a finished child", pid);
    Reap(pid);
  }
  std::lock_guard<std::mutex> l(S().mu);
  S().adopted = std::move(adopted);
  return static_cast<int>(killed.size());
}

}  // namespace codl::agent
