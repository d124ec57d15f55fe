#include "agent/child_guard.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/subreaper.h"

namespace codl::agent {
namespace {

// Everything below runs in the forked guard: no allocation, no locks, no stdio.

// "/proc/" + pid + suffix into out (at least 64 bytes).
void ProcPath(const char* pid, const char* suffix, char* out) {
  size_t n = 0;
  for (const char* p = "/proc/"; *p;) out[n++] = *p++;
  for (const char* p = pid; *p && n < 40;) out[n++] = *p++;
  for (const char* p = suffix; *p && n < 62;) out[n++] = *p++;
  out[n] = '\0';
}

bool AllDigits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

pid_t ParsePid(const char* s) {
  pid_t v = 0;
  for (; *s; ++s) v = v * 10 + (*s - '0');
  return v;
}

// Whether the NUL-separated environment in buf[0, n) holds `entry` as one whole variable.
bool HoldsEntry(const char* buf, size_t n, const char* entry, size_t len) {
  for (size_t i = 0; i + len <= n;) {
    const char* var = buf + i;
    size_t var_len = 0;
    while (i + var_len < n && var[var_len] != '\0') ++var_len;
    if (var_len == len && memcmp(var, entry, len) == 0) return true;
    i += var_len + 1;
  }
  return false;
}

// A process's environment is at most a few MiB (ARG_MAX); a larger one is read in part, and its
// tag (set first by the agent's spawn, inherited at the same place) is near the start anyway.
char g_env[1 << 20];

// SIGKILL to every process (but this one) whose environment holds `entry`; how many it found.
// *in_group: whether one of them was in process group `group`.
int KillTagged(const char* entry, pid_t group, bool* in_group) {
  const size_t len = strlen(entry);
  const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  const pid_t self = getpid();
  int found = 0;
  alignas(8) char dents[8192];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, dents, sizeof dents);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      unsigned short reclen;
      memcpy(&reclen, dents + off + 16, sizeof reclen);
      const char* name = dents + off + 19;
      off += reclen;
      if (!AllDigits(name)) continue;
      const pid_t pid = ParsePid(name);
      if (pid == self) continue;
      char path[64];
      ProcPath(name, "/environ", path);
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      size_t got = 0;
      for (;;) {
        const ssize_t r = read(fd, g_env + got, sizeof g_env - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<size_t>(r);
        if (got == sizeof g_env) break;
      }
      close(fd);
      if (HoldsEntry(g_env, got, entry, len)) {
        ++found;
        if (getpgid(pid) == group) *in_group = true;
        kill(pid, SIGKILL);
      }
    }
  }
  close(dir);
  return found;
}

int GuardBody(pid_t group, const char* tag_entry, const char* cgroup_kill) {
  char byte;
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, &byte, 1);
    if (n == 1) return 0;  // the agent is done with the child
    if (n == 0 || errno != EINTR) break;
  }
  KillChildTree(group, tag_entry, cgroup_kill, 5);
  return 0;
}

}  // namespace

int KillChildTree(pid_t group, const char* tag_entry, const char* cgroup_kill, int rounds) {
  int first = 0;
  for (int round = 0; round < rounds; ++round) {
    // The group is killed once a tagged process shows it is still the child's (its id cannot
    // be another group's then); that also reaches members that cleared their environment.
    bool ours = false;
    const int found = tag_entry && *tag_entry ? KillTagged(tag_entry, group, &ours) : 0;
    if (ours && group > 1) kill(-group, SIGKILL);
    if (cgroup_kill && *cgroup_kill) {
      const int fd = open(cgroup_kill, O_WRONLY | O_CLOEXEC);
      if (fd >= 0) {
        (void)!write(fd, "1", 1);
        close(fd);
      }
    }
    if (round == 0) first = found;
    if (round + 1 < rounds) {
      timespec ts{0, 100'000'000};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
      }
    }
  }
  return first;
}

Result<ChildGuard> ChildGuard::Start(pid_t group, const std::string& tag,
                                     const std::string& cgroup_dir) {
  // Built before the fork: the child only reads them.
  const std::string entry = std::string(kChildTagEnv) + "=" + tag;
  const std::string kill_file = cgroup_dir.empty() ? std::string() : cgroup_dir + "/cgroup.kill";
  SpawnOptions o;
  o.group = SpawnOptions::Group::kOwnGroup;  // not in the child's group, nor the agent's
  o.in = Stdio::Pipe();
  o.out = Stdio::Null();
  o.err = Stdio::Null();
  auto proc = Subprocess::ForkCall(o, [group, &entry, &kill_file] {
    return GuardBody(group, entry.c_str(), kill_file.c_str());
  });
  if (!proc.ok()) return proc.status().WithContext("child guard");
  RegisterChild(proc->pid(), tag);
  ChildGuard g;
  g.proc_ = std::move(*proc);
  return g;
}

void ChildGuard::Release() {
  if (proc_.pid() < 0 || proc_.reaped()) return;
  if (const int fd = proc_.stdin_fd(); fd >= 0) {
    // A guard someone killed makes the write fail with EPIPE: its SIGPIPE must not end the
    // agent. Blocked on this thread for the write, and taken if it came.
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    if (write(fd, "x", 1) < 0 && errno == EPIPE) {
      const timespec now{0, 0};
      sigtimedwait(&pipe_only, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  proc_.CloseStdin();
  if (!proc_.WaitFor(5)) {
    proc_.Signal(SIGKILL);
    proc_.Wait();
  }
  ForgetChild(proc_.pid());
}

void ChildGuard::CloseWithoutRelease() {
  proc_.CloseStdin();
  proc_.Wait();
  ForgetChild(proc_.pid());
}

}  // namespace codl::agent
