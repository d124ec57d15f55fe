#include "agent/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "lib/common/read_file.h"
#include "lib/common/units.h"

namespace codl::agent {
namespace {

std::string ReadText(const std::string& path) { return ReadFileText(path).value_or(""); }

// Cgroup files take one write per value; errors come back from write(), not from open().
Status WriteText(const std::string& path, const std::string& value) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Err("opening " + path + ": " + std::strerror(errno));
  const ssize_t n = write(fd, value.data(), value.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return Err("writing '" + value + "' to " + path + ": " + std::strerror(err));
  }
  return Status::Ok();
}

std::string Trimmed(const std::string& s) { return std::string(TrimSpace(s)); }

}  // namespace

std::string CgroupV2Mount(const std::string& mountinfo) {
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
    const auto sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream tail(line.substr(sep + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, dev, root, mountpoint;
    if (head >> id >> parent >> dev >> root >> mountpoint) return mountpoint;
  }
  return "";
}

std::string OwnCgroupV2Path(const std::string& proc_self_cgroup) {
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

bool HasController(const std::string& controllers, const std::string& name) {
  std::istringstream words(controllers);
  std::string w;
  while (words >> w) {
    if (w == name) return true;
  }
  return false;
}

Result<std::unique_ptr<Cgroup>> Cgroup::Create(const std::string& parent_dir,
                                               const std::string& name) {
  const std::string path = parent_dir + "/" + name;
  if (mkdir(path.c_str(), 0755) != 0) {
    return Err("creating cgroup " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<Cgroup> c(new Cgroup());
  c->path_ = path;  // ours from here on: the destructor removes it
  c->procs_fd_ = open((c->path_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (c->procs_fd_ < 0) {
    const std::string err = std::strerror(errno);
    return Err("opening " + c->path_ + "/cgroup.procs: " + err);  // ~Cgroup removes the dir
  }
  return c;
}

Cgroup::~Cgroup() {
  if (procs_fd_ >= 0) close(procs_fd_);
  if (path_.empty()) return;
  if (!WaitEmpty(0)) {
    Kill();
    WaitEmpty(5);
  }
  rmdir(path_.c_str());
}

Status Cgroup::SetCpuset(const std::string& cpus, const std::string& mems) {
  if (!cpus.empty()) {
    if (Status s = WriteText(path_ + "/cpuset.cpus", cpus); !s.ok()) return s;
  }
  if (!mems.empty()) {
    if (Status s = WriteText(path_ + "/cpuset.mems", mems); !s.ok()) return s;
  }
  return Status::Ok();
}

std::string Cgroup::EffectiveCpus() const {
  return Trimmed(ReadText(path_ + "/cpuset.cpus.effective"));
}

Result<double> Cgroup::CpuSeconds() const {
  std::istringstream stat(ReadText(path_ + "/cpu.stat"));
  std::string key;
  long long value = 0;
  while (stat >> key >> value) {
    if (key == "usage_usec") return value / 1e6;
  }
  return Err("no usage_usec in " + path_ + "/cpu.stat");
}

void Cgroup::Kill() {
  if (WriteText(path_ + "/cgroup.kill", "1").ok()) return;
  // Before Linux 5.14: no cgroup.kill. A process forking meanwhile may need a second round.
  for (int round = 0; round < 3; ++round) {
    std::istringstream pids(ReadText(path_ + "/cgroup.procs"));
    pid_t pid = 0;
    bool any = false;
    while (pids >> pid) {
      kill(pid, SIGKILL);
      any = true;
    }
    if (!any) return;
  }
}

bool Cgroup::WaitEmpty(double timeout_s) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    // cgroup.events says "populated 0" once the last process has been reaped.
    const std::string events = ReadText(path_ + "/cgroup.events");
    if (events.empty() || events.find("populated 0") != std::string::npos) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<int64_t> Cgroup::ReclaimMemory() const {
  auto current = [this]() -> Result<int64_t> {
    const std::string text = Trimmed(ReadText(path_ + "/memory.current"));
    if (text.empty()) return Err("no memory controller in " + path_);
    return static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10));
  };
  auto before = current();
  if (!before.ok()) return before.status();
  if (*before == 0) return int64_t{0};
  // EAGAIN: less than asked could be reclaimed (pages in use elsewhere); what went still counts.
  if (Status s = WriteText(path_ + "/memory.reclaim", std::to_string(*before));
      !s.ok() && s.error().find(std::strerror(EAGAIN)) == std::string::npos) {
    return s;
  }
  auto after = current();
  if (!after.ok()) return after.status();
  return std::max<int64_t>(0, *before - *after);
}

CgroupSupport CgroupSupport::Detect() {
  CgroupSupport s;
  const std::string mount = CgroupV2Mount(ReadText("/proc/self/mountinfo"));
  if (mount.empty()) {
    s.reason = "no cgroup v2 mount";
    return s;
  }
  const std::string rel = OwnCgroupV2Path(ReadText("/proc/self/cgroup"));
  const std::string dir = mount + (rel == "/" ? "" : rel);
  const std::string controllers = ReadText(dir + "/cgroup.controllers");
  for (const char* needed : {"cpu", "cpuset"}) {
    if (!HasController(controllers, needed)) {
      s.reason = "cgroup v2 " + dir + " has no " + needed +
                 " controller (on a hybrid host it is bound to cgroup v1)";
      return s;
    }
  }
  if (access(dir.c_str(), W_OK) != 0 || access((dir + "/cgroup.procs").c_str(), W_OK) != 0) {
    s.reason = "cgroup " + dir + " is not writable (no delegated subtree)";
    return s;
  }
  // No internal processes: the agent moves to a leaf so that its cgroup can pass controllers on.
  const std::string leaf = dir + "/codl-agent";
  if (mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    s.reason = "creating " + leaf + ": " + std::strerror(errno);
    return s;
  }
  if (Status st = WriteText(leaf + "/cgroup.procs", std::to_string(getpid())); !st.ok()) {
    s.reason = st.error();
    return s;
  }
  if (Status st = WriteText(dir + "/cgroup.subtree_control", "+cpu +cpuset"); !st.ok()) {
    s.reason = st.error() + " (other processes in " + dir + "?)";
    return s;
  }
  // Optional (Cgroup::ReclaimMemory): without it victim.cache cold relies on posix_fadvise alone.
  if (HasController(controllers, "memory"))
    (void)WriteText(dir + "/cgroup.subtree_control", "+memory");
  s.usable = true;
  s.children_dir = dir;
  return s;
}

}  // namespace codl::agent
