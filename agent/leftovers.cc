#include "agent/leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "agent/child_process.h"

namespace codl::agent {
namespace {

constexpr const char* kFile = "children";
constexpr const char* kTemp = "children.tmp";

// Process group (field 5) and start time (field 22) of `pid`; false when it is gone.
bool GroupAndStart(pid_t pid, pid_t* pgrp, uint64_t* start) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return false;
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream rest(s.substr(rp + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return false;
    if (i == 5) *pgrp = static_cast<pid_t>(std::strtol(field.c_str(), nullptr, 10));
  }
  *start = std::strtoull(field.c_str(), nullptr, 10);
  return true;
}

// Members of process group `pgid` that started no later than `before_ticks`.
std::vector<pid_t> OldGroupMembers(pid_t pgid, uint64_t before_ticks) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 1 || *end != '\0' || pid == getpid()) continue;
    pid_t pgrp = 0;
    uint64_t start = 0;
    if (GroupAndStart(static_cast<pid_t>(pid), &pgrp, &start) && pgrp == pgid &&
        start <= before_ticks) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(d);
  return out;
}

}  // namespace

uint64_t BootTicksNow() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<uint64_t>(ts.tv_sec) * hz +
         static_cast<uint64_t>(ts.tv_nsec) * hz / 1000000000;
}

std::string ProcessExe(pid_t pid) {
  char buf[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : "";
}

Result<UniqueFd> OpenStateDir(const std::string& state_dir) {
  if (mkdir(state_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Err("cannot create state dir '" + state_dir + "': " + std::strerror(errno));
  }
  auto fd = OpenRootDir(state_dir);
  if (!fd.ok()) return Error{"state dir: " + fd.error(), fd.status().code()};
  if (Status s = CheckPrivateDir(fd->get(), "state dir '" + state_dir + "'"); !s.ok()) return s;
  return fd;
}

Status WriteLeftovers(const std::string& state_dir, std::vector<ChildRecord> children) {
  auto dir = OpenStateDir(state_dir);
  if (!dir.ok()) return dir.status();
  // A stale temp file (or a symlink planted there) is removed, never followed.
  unlinkat(dir->get(), kTemp, 0);
  auto tmp = OpenFileBeneath(dir->get(), kTemp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (!tmp.ok()) return tmp.status();
  std::string text = "written " + std::to_string(BootTicksNow()) + "\n";
  const std::string self = ProcessExe(getpid());
  for (auto& c : children) {
    if (c.exe.empty()) c.exe = ProcessExe(c.pid);
    // Caught between fork and exec it is still our own image: record no executable then (the
    // start time alone identifies it) rather than one it will not have after exec.
    if (c.exe == self) c.exe.clear();
    text += std::to_string(c.pid) + " " + std::to_string(c.start_ticks) + " " + c.exe + "\n";
  }
  if (write(tmp->get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return Err("cannot write the leftovers file: " + std::string(std::strerror(errno)));
  }
  if (renameat(dir->get(), kTemp, dir->get(), kFile) != 0) {
    return Err("cannot replace the leftovers file: " + std::string(std::strerror(errno)));
  }
  return Status::Ok();
}

Result<int> KillLeftovers(const std::string& state_dir) {
  auto dir = OpenStateDir(state_dir);
  if (!dir.ok()) return dir.status();
  auto file = OpenFileBeneath(dir->get(), kFile, O_RDONLY);
  if (!file.ok()) return 0;  // no file: nothing was running
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(file->get(), buf, sizeof buf)) > 0 && text.size() < (1 << 20);) {
    text.append(buf, static_cast<size_t>(n));
  }
  std::istringstream in(text);
  std::string line;
  uint64_t written = 0;
  int killed = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first == "written") {
      fields >> written;
      continue;
    }
    const long pid = std::strtol(first.c_str(), nullptr, 10);
    uint64_t ticks = 0;
    std::string exe;
    fields >> ticks;
    std::getline(fields >> std::ws, exe);
    if (pid <= 1 || pid == getpid() || written == 0) continue;  // malformed or old format
    const pid_t p = static_cast<pid_t>(pid);
    // The leader: only while it is the very process we started (start time and executable).
    const uint64_t now_ticks = ProcessStartTicks(p);
    const std::string now_exe = ProcessExe(p);  // "" for a zombie
    if (now_ticks != 0 &&
        (now_ticks != ticks || (!exe.empty() && !now_exe.empty() && now_exe != exe))) {
      continue;  // another process has that pid now (or it is not what we started): hands off
    }
    if (now_ticks != 0 && !now_exe.empty()) {
      spdlog::warn("killing leftover child pid {} ({}) from a previous agent run", pid, exe);
      killed += kill(p, SIGKILL) == 0 ? 1 : 0;
    }
    // Its group's members that predate the file: the leader's descendants, left behind when
    // PDEATHSIG took the leader. A pid in use as a group id is never reused, so a group whose
    // leader pid is free or still ours holds only our lineage and processes started later.
    for (pid_t m : OldGroupMembers(p, written)) {
      spdlog::warn("killing leftover process {} of group {} from a previous agent run", m, pid);
      killed += kill(m, SIGKILL) == 0 ? 1 : 0;
    }
  }
  return killed;
}

}  // namespace codl::agent
