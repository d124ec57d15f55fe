#include "lib/common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

#include "lib/common/clock.h"

extern char** environ;

namespace codl {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// An owned descriptor, closed on every early return of the preparation.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.Release()) {}
  Fd& operator=(Fd&& o) noexcept {
    Reset(o.Release());
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Keeps the child's descriptors away from 0..2: dup2 onto a standard slot must never clobber
// a descriptor still needed for another one (possible only when our own stdio was closed).
Fd AboveStdio(Fd fd) {
  if (fd.get() < 0 || fd.get() > 2) return fd;
  return Fd(fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
}

struct StreamEnds {
  Fd child;   // becomes the child's 0/1/2
  Fd parent;  // our end of a pipe
};

Result<StreamEnds> OpenPipe(bool child_reads) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return Err(Errno("pipe"));
  Fd read_end(p[0]), write_end(p[1]);
  if (child_reads) return StreamEnds{AboveStdio(std::move(read_end)), std::move(write_end)};
  return StreamEnds{AboveStdio(std::move(write_end)), std::move(read_end)};
}

Result<StreamEnds> OpenInput(const std::string& data) {
  auto ends = OpenPipe(/*child_reads=*/true);
  if (!ends.ok()) return ends;
  // Non-blocking: more than the pipe holds is an error here, not a parent stuck forever.
  fcntl(ends->parent.get(), F_SETFL, O_NONBLOCK);
  if (!data.empty() &&
      write(ends->parent.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return Err("stdin input of " + std::to_string(data.size()) + " bytes does not fit a pipe");
  }
  ends->parent.Reset();  // the child sees EOF after the data
  return ends;
}

// Opens what the child's descriptor `slot` (0, 1, 2) is connected to.
Result<StreamEnds> OpenStream(const Stdio& s, int slot) {
  const char* name = slot == 0 ? "stdin" : slot == 1 ? "stdout" : "stderr";
  switch (s.kind) {
    case Stdio::Kind::kInherit: return StreamEnds{};
    case Stdio::Kind::kNull: {
      Fd fd(open("/dev/null", O_RDWR | O_CLOEXEC));
      if (fd.get() < 0) return Err(Errno("open /dev/null"));
      return StreamEnds{AboveStdio(std::move(fd)), Fd()};
    }
    case Stdio::Kind::kPipe: return OpenPipe(/*child_reads=*/slot == 0);
    case Stdio::Kind::kInput:
      if (slot != 0) return Err(std::string("Stdio::Input is for stdin, not ") + name);
      return OpenInput(s.data);
    case Stdio::Kind::kFile: {
      const int flags = slot == 0 ? O_RDONLY : O_WRONLY | O_CREAT | (s.append ? O_APPEND : O_TRUNC);
      Fd fd(open(s.path.c_str(), flags | O_CLOEXEC, 0644));
      if (fd.get() < 0) return Err(Errno(std::string(name) + " file " + s.path));
      return StreamEnds{AboveStdio(std::move(fd)), Fd()};
    }
    case Stdio::Kind::kSameAsStdout:
      if (slot != 2) return Err(std::string("Stdio::SameAsStdout is for stderr, not ") + name);
      return StreamEnds{};
  }
  return Err("unknown Stdio kind");
}

}  // namespace

bool IsSecretEnv(const std::string& name) { return name.rfind("CODL_TOKEN", 0) == 0; }

std::string UserName(uid_t uid) {
  passwd pw{}, *found = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) return pw.pw_name;
  return "uid-" + std::to_string(uid);
}

namespace {

// Everything the child needs, built before fork.
struct ChildPlan {
  std::optional<RunAs> run_as;
  std::vector<std::string> argv_storage, env_storage;
  std::vector<char*> argv, envp;
  std::string executable;
  const char* cwd = nullptr;
  SpawnOptions::Group group = SpawnOptions::Group::kInherit;
  int death_signal = 0;
  pid_t parent = 0;
  bool stderr_to_stdout = false;
  int cgroup_procs_fd = -1;
  sigset_t no_signals;
  StreamEnds streams[3];
  StreamEnds extra;  // SpawnOptions::extra_out_fd
  int extra_slot = -1;
};

void BuildArgvEnv(const SpawnOptions& o, ChildPlan& plan) {
  plan.argv_storage = o.argv;
  for (auto& a : plan.argv_storage) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  plan.executable = o.executable.empty() && !o.argv.empty() ? o.argv[0] : o.executable;
  for (char** e = o.inherit_env ? environ : nullptr; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (o.env.count(name) == 0 && !IsSecretEnv(name)) plan.env_storage.push_back(kv);
  }
  for (const auto& [k, v] : o.env) plan.env_storage.push_back(k + "=" + v);
  for (auto& kv : plan.env_storage) plan.envp.push_back(kv.data());
  plan.envp.push_back(nullptr);
}

Result<std::unique_ptr<ChildPlan>> Prepare(const SpawnOptions& o) {
  auto plan = std::make_unique<ChildPlan>();
  BuildArgvEnv(o, *plan);
  plan->cwd = o.cwd.empty() ? nullptr : o.cwd.c_str();
  plan->group = o.group;
  plan->run_as = o.run_as;
  plan->death_signal = o.death_signal;
  plan->cgroup_procs_fd = o.cgroup_procs_fd;
  plan->parent = getpid();
  plan->stderr_to_stdout = o.err.kind == Stdio::Kind::kSameAsStdout;
  sigemptyset(&plan->no_signals);
  const Stdio* streams[3] = {&o.in, &o.out, &o.err};
  for (int slot = 0; slot < 3; ++slot) {
    auto ends = OpenStream(*streams[slot], slot);
    if (!ends.ok()) return ends.status();
    if (streams[slot]->kind != Stdio::Kind::kInherit &&
        streams[slot]->kind != Stdio::Kind::kSameAsStdout && ends->child.get() < 0) {
      return Err(Errno("fcntl"));  // AboveStdio could not move it
    }
    plan->streams[slot] = std::move(*ends);
  }
  if (o.extra_out_fd >= 0) {
    if (o.extra_out_fd < 3) return Err("extra_out_fd must be 3 or more (0-2 are stdio)");
    auto ends = OpenPipe(/*child_reads=*/false);
    if (!ends.ok()) return ends.status();
    if (ends->child.get() < 0) return Err(Errno("fcntl"));
    plan->extra = std::move(*ends);
    plan->extra_slot = o.extra_out_fd;
  }
  return plan;
}

// Closes descriptors lowest..highest (highest -1: all above lowest).
void CloseRange(int lowest, int highest = -1) {
  if (highest >= 0 && highest < lowest) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, lowest, highest < 0 ? ~0U : static_cast<unsigned>(highest), 0) == 0)
    return;
#endif
  const long max = sysconf(_SC_OPEN_MAX);
  const long end = highest >= 0 ? highest + 1L : (max > 0 && max < 65536 ? max : 65536);
  for (long fd = lowest; fd < end; ++fd) close(static_cast<int>(fd));
}

// In the forked child: async-signal-safe calls only. Returns false on a failure (exit 126).
bool SetUpChild(const ChildPlan& plan) {
  if (plan.group == SpawnOptions::Group::kOwnSession) setsid();
  if (plan.group == SpawnOptions::Group::kOwnGroup) setpgid(0, 0);
  // Before PR_SET_PDEATHSIG: the kernel clears it when the credentials change. Raw syscalls:
  // glibc's wrappers would try to signal our (nonexistent, after fork) other threads.
  if (plan.run_as) {
    const RunAs& r = *plan.run_as;
    if (syscall(SYS_setgroups, r.groups.size(), r.groups.data()) != 0 ||
        syscall(SYS_setresgid, r.gid, r.gid, r.gid) != 0 ||
        syscall(SYS_setresuid, r.uid, r.uid, r.uid) != 0) {
      return false;
    }
  }
  if (plan.death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, plan.death_signal);
    if (getppid() != plan.parent) _exit(127);  // the parent died between fork and prctl
  }
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &plan.no_signals, nullptr);
  if (plan.cgroup_procs_fd >= 0 && write(plan.cgroup_procs_fd, "0", 1) != 1) return false;
  for (int slot = 0; slot < 3; ++slot) {
    const int fd = plan.streams[slot].child.get();
    if (fd >= 0 && dup2(fd, slot) < 0) return false;
  }
  if (plan.stderr_to_stdout && dup2(1, 2) < 0) return false;
  if (plan.extra_slot >= 0) {
    // After the stdio dups (their child ends are spent), so clobbering one of them is harmless.
    const int fd = plan.extra.child.get();
    if (fd == plan.extra_slot) {
      if (fcntl(fd, F_SETFD, 0) < 0) return false;  // dup2 onto itself keeps FD_CLOEXEC
    } else if (dup2(fd, plan.extra_slot) < 0) {
      return false;
    }
    CloseRange(3, plan.extra_slot - 1);
    CloseRange(plan.extra_slot + 1);
  } else {
    CloseRange(3);
  }
  if (plan.cwd != nullptr && chdir(plan.cwd) != 0) {
    // After the credentials change: the working directory is checked as the child's user. The
    // message goes to the child's stderr (the caller keeps its tail); write(2) only.
    const char* why = errno == EACCES    ? "permission denied"
                      : errno == ENOENT  ? "no such directory"
                      : errno == ENOTDIR ? "not a directory"
                                         : "cannot enter it";
    auto put = [](const char* t) { (void)!write(2, t, strlen(t)); };
    put("cannot use the working directory '");
    put(plan.cwd);
    put(plan.run_as ? "' as the user it runs as: " : "': ");
    put(why);
    put("\n");
    return false;
  }
  return true;
}

// The parent's side of a fresh fork: the pipe ends the child does not use stay with us.
Subprocess Adopt(pid_t pid, SpawnOptions::Group group, ChildPlan& plan) {
  // Also from the parent: a kill(-pid) right after Spawn must not race the child's setpgid.
  if (group == SpawnOptions::Group::kOwnGroup) setpgid(pid, pid);
  StreamEnds(&ends)[3] = plan.streams;
  return Subprocess(pid, group != SpawnOptions::Group::kInherit, ends[0].parent.Release(),
                    ends[1].parent.Release(), ends[2].parent.Release(),
                    plan.extra.parent.Release());
}

}  // namespace

Result<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Err("spawn: empty argv");
  auto plan = Prepare(options);
  if (!plan.ok()) return plan.status().WithContext("spawn " + options.argv[0]);
  const ChildPlan& p = **plan;
  const pid_t pid = fork();
  if (pid < 0) return Err(Errno("fork"));
  if (pid == 0) {
    if (!SetUpChild(p)) _exit(126);
    execve(p.executable.c_str(), p.argv.data(), p.envp.data());
    _exit(127);
  }
  return Adopt(pid, options.group, **plan);
}

Result<Subprocess> Subprocess::ForkCall(const SpawnOptions& options,
                                        const std::function<int()>& body) {
  if (!options.argv.empty() || !options.env.empty()) {
    return Err("ForkCall: argv and env must be empty (nothing is exec'ed)");
  }
  auto plan = Prepare(options);
  if (!plan.ok()) return plan.status().WithContext("fork");
  const pid_t pid = fork();
  if (pid < 0) return Err(Errno("fork"));
  if (pid == 0) {
    if (!SetUpChild(**plan)) _exit(126);
    _exit(body());  // _exit: the parent's atexit handlers and static destructors are not ours
  }
  return Adopt(pid, options.group, **plan);
}

Subprocess::Subprocess(Subprocess&& o) noexcept { *this = std::move(o); }

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this == &o) return *this;
  CloseAll();
  pid_ = std::exchange(o.pid_, -1);
  own_group_ = o.own_group_;
  reaped_ = std::exchange(o.reaped_, false);
  status_ = o.status_;
  in_fd_ = std::exchange(o.in_fd_, -1);
  out_fd_ = std::exchange(o.out_fd_, -1);
  err_fd_ = std::exchange(o.err_fd_, -1);
  extra_fd_ = std::exchange(o.extra_fd_, -1);
  return *this;
}

Subprocess::~Subprocess() { CloseAll(); }

void Subprocess::CloseAll() {
  for (int* fd : {&in_fd_, &out_fd_, &err_fd_, &extra_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

int Subprocess::ReleaseStdout() { return std::exchange(out_fd_, -1); }
int Subprocess::ReleaseStderr() { return std::exchange(err_fd_, -1); }
int Subprocess::ReleaseExtra() { return std::exchange(extra_fd_, -1); }

void Subprocess::CloseStdin() {
  if (in_fd_ >= 0) close(in_fd_);
  in_fd_ = -1;
}

namespace {
ExitStatus Decode(int status, const rusage& usage) {
  ExitStatus s;
  s.exited = WIFEXITED(status);
  s.code = s.exited ? WEXITSTATUS(status) : 0;
  s.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  s.user_cpu_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6;
  s.system_cpu_s = usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  return s;
}
}  // namespace

ExitStatus Subprocess::Wait() {
  if (reaped_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r;
  rusage usage{};
  while ((r = wait4(pid_, &status, 0, &usage)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  // r < 0 (ECHILD): someone else reaped it; neither an exit code nor a signal is known.
  status_ = r == pid_ ? Decode(status, usage) : ExitStatus{};
  return status_;
}

std::optional<ExitStatus> Subprocess::TryWait() {
  if (reaped_ || pid_ <= 0) return status_;
  int status = 0;
  rusage usage{};
  const pid_t r = wait4(pid_, &status, WNOHANG, &usage);
  if (r == 0 || (r < 0 && errno == EINTR)) return std::nullopt;
  reaped_ = true;
  status_ = r == pid_ ? Decode(status, usage) : ExitStatus{};
  return status_;
}

std::optional<ExitStatus> Subprocess::WaitFor(double timeout_s) {
  const double deadline = SteadySeconds() + std::max(0.0, timeout_s);
  // A pidfd becomes readable at exit: no polling interval to pick. Older kernels: short sleeps.
#ifdef SYS_pidfd_open
  Fd pidfd(reaped_ ? -1 : static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)));
#else
  Fd pidfd;
#endif
  for (;;) {
    if (auto s = TryWait()) return s;
    const double left = deadline - SteadySeconds();
    if (left <= 0) return std::nullopt;
    if (pidfd.get() >= 0) {
      pollfd p{pidfd.get(), POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
    } else {
      usleep(static_cast<useconds_t>(std::min(left, 0.005) * 1e6));
    }
  }
}

void Subprocess::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

void Subprocess::SignalGroup(int sig) {
  if (pid_ > 0 && own_group_) kill(-pid_, sig);
}

namespace {
// Reads both pipes until EOF on both or the deadline. Returns false at the deadline.
bool DrainUntil(int out_fd, int err_fd, double deadline, CapturedRun& run) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = (out_fd >= 0) + (err_fd >= 0);
  char buf[65536];
  while (open_fds > 0) {
    const double left = deadline - SteadySeconds();
    if (left <= 0) return false;
    if (poll(fds, 2, static_cast<int>(std::ceil(left * 1000))) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? run.out : run.err).append(buf, static_cast<size_t>(n));
    }
  }
  return true;
}
}  // namespace

CapturedRun CaptureOutput(Subprocess& child, double timeout_s) {
  CapturedRun run;
  const double start = SteadySeconds();
  const double deadline = start + timeout_s;
  child.CloseStdin();
  Fd out(child.ReleaseStdout()), err(child.ReleaseStderr());
  bool in_time = DrainUntil(out.get(), err.get(), deadline, run);
  std::optional<ExitStatus> status;
  if (in_time) status = child.WaitFor(deadline - SteadySeconds());
  if (!status) {
    run.timed_out = true;
    // A command that ran out of time takes its helpers with it when it leads a group.
    child.SignalGroup(SIGKILL);
    child.Signal(SIGKILL);
    status = child.Wait();
  }
  run.status = *status;
  run.seconds = SteadySeconds() - start;
  return run;
}

Result<CapturedRun> RunAndCapture(SpawnOptions options, double timeout_s) {
  if (options.in.kind == Stdio::Kind::kInherit) options.in = Stdio::Null();
  if (options.out.kind == Stdio::Kind::kInherit) options.out = Stdio::Pipe();
  if (options.err.kind == Stdio::Kind::kInherit) options.err = Stdio::Pipe();
  auto child = Subprocess::Spawn(options);
  if (!child.ok()) return child.status();
  return CaptureOutput(*child, timeout_s);
}

}  // namespace codl
