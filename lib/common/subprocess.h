// Subprocess: the one place that forks. Every child codl starts (codl-inject and victim commands
// from the agent, the MPS control daemon, the forked CUDA probe, the binaries tests run) goes
// through Spawn or ForkCall, so the rules live here once:
// - everything the child needs (argv, envp, opened files, pipes) is allocated before fork();
//   after it the child makes only async-signal-safe calls, because another thread may have held
//   the allocator's lock at the moment of the fork;
// - the child never inherits our descriptors beyond 0/1/2 (a daemon holding the agent's stdout
//   pipe would keep a telemetry stream open forever), nor our blocked-signal mask (daemons block
//   SIGINT/SIGTERM for sigwait) or an ignored SIGPIPE;
// - secrets in our environment (CODL_TOKEN, IsSecretEnv) are never inherited; a child gets one
//   only when its options set it explicitly;
// - a child may run as another user (RunAs: the agent runs victims unprivileged);
// - exec failures exit 127, setup failures (chdir, dup2, credentials) 126, like a shell.
// Std + POSIX only: codl-inject links it on bare GPU boxes.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl {

// How one of the child's standard streams is connected.
struct Stdio {
  enum class Kind { kInherit, kNull, kPipe, kInput, kFile, kSameAsStdout };
  Kind kind = Kind::kInherit;
  std::string path;     // kFile
  bool append = false;  // kFile: append instead of truncating
  std::string data;     // kInput

  static Stdio Inherit() { return {}; }
  static Stdio Null() { return Of(Kind::kNull); }
  // A pipe; the parent's end is Subprocess::stdin_fd/stdout_fd/stderr_fd.
  static Stdio Pipe() { return Of(Kind::kPipe); }
  // stdin only: a pipe holding `data`, written before fork and closed, so a child that exits
  // early cannot raise SIGPIPE in the parent. At most one pipe buffer (4 KiB guaranteed).
  static Stdio Input(std::string data) {
    Stdio s = Of(Kind::kInput);
    s.data = std::move(data);
    return s;
  }
  // stdout/stderr: a file, created 0644 if missing.
  static Stdio File(std::string path, bool append = false) {
    Stdio s = Of(Kind::kFile);
    s.path = std::move(path);
    s.append = append;
    return s;
  }
  // stderr only: wherever stdout goes (one stream, interleaved in write order).
  static Stdio SameAsStdout() { return Of(Kind::kSameAsStdout); }

 private:
  static Stdio Of(Kind kind) {
    Stdio s;
    s.kind = kind;
    return s;
  }
};

// Credentials for a child: set (groups, then gid, then uid) in the child before exec.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups; empty: none
  std::string user;           // for messages
};

// True for variables of ours that hold secrets (CODL_TOKEN...), which children never inherit.
bool IsSecretEnv(const std::string& name);

// The login name of `uid` (getpwuid_r), or "uid-N" when it has none.
std::string UserName(uid_t uid);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is what the child sees as its name
  std::string executable;         // path to exec; empty: argv[0]. No PATH search.
  // Added to (overriding) this process's environment, less its secrets (IsSecretEnv).
  std::map<std::string, std::string> env;
  // false: the child's environment is `env` alone, nothing of ours (a victim's clean
  // environment, docs/security.md).
  bool inherit_env = true;
  std::string cwd;              // empty: inherit; entered after the credentials change (run_as)
  std::optional<RunAs> run_as;  // nullopt: our own uid/gid
  // kOwnGroup: the child leads a new process group, so KillGroup reaches its helpers too.
  // kOwnSession: setsid(), also detached from our terminal and from our group (a daemon it
  // starts must not die when someone kills our group).
  enum class Group { kInherit, kOwnGroup, kOwnSession };
  Group group = Group::kInherit;
  // PR_SET_PDEATHSIG: the signal the child gets when its parent dies. Linux sends it when the
  // *thread* that forked exits, so fork from a thread that lives as long as the process. The
  // child exits 127 if the parent died before the setting took effect.
  int death_signal = 0;
  Stdio in = Stdio::Inherit();
  Stdio out = Stdio::Inherit();
  Stdio err = Stdio::Inherit();
  // An open cgroup v2 `cgroup.procs` file (or -1): the child writes "0" to it before exec, so
  // it and everything it starts are in that cgroup from the first instruction (race-free
  // accounting and cleanup). Setup fails (exit 126) if the write fails. Still owned by the caller.
  int cgroup_procs_fd = -1;
  // A further pipe the child writes to, at this descriptor number in the child (>= 3; -1: none),
  // kept open across the close of everything else; our read end is Subprocess::extra_fd().
  // The agent's progress channel (CODL_PROGRESS_FD, docs/victim.md).
  int extra_out_fd = -1;
};

struct ExitStatus {
  bool exited = false;  // exited normally with `code`; otherwise killed by `signal`
  int code = 0;
  int signal = 0;
  // CPU time (wait4's rusage) of the child and of the descendants it waited for.
  double user_cpu_s = 0;
  double system_cpu_s = 0;
  // The exit code, or -signal when a signal ended it.
  int CodeOrNegativeSignal() const { return exited ? code : -signal; }
};

// A started child. Move-only; the destructor closes the parent's pipe ends but neither kills
// nor reaps (an owner that wants that says so: Kill + Wait).
class Subprocess {
 public:
  static Result<Subprocess> Spawn(const SpawnOptions& options);
  // Fork without exec: the child applies options (argv and env must be empty: nothing to exec
  // and setenv is not async-signal-safe), runs `body` and _exits with its return value. For
  // work that must happen in a copy of this process (the CUDA probe: the driver initialised in
  // a child leaves the parent free to fork later). `body` runs after fork: call this before
  // starting threads that may hold locks `body` needs.
  static Result<Subprocess> ForkCall(const SpawnOptions& options, const std::function<int()>& body);

  Subprocess() = default;  // no child: pid() is -1, Wait returns at once
  // Adopts a forked child and the parent's pipe ends (-1: none). Spawn and ForkCall use it.
  Subprocess(pid_t pid, bool own_group, int in_fd, int out_fd, int err_fd, int extra_fd = -1)
      : pid_(pid),
        own_group_(own_group),
        in_fd_(in_fd),
        out_fd_(out_fd),
        err_fd_(err_fd),
        extra_fd_(extra_fd) {}
  Subprocess(Subprocess&& o) noexcept;
  Subprocess& operator=(Subprocess&& o) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // The parent's ends of Stdio::Pipe streams, -1 otherwise. Still owned by this object.
  int stdin_fd() const { return in_fd_; }
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  int extra_fd() const { return extra_fd_; }  // SpawnOptions::extra_out_fd's read end
  // Hands a pipe end to the caller, who closes it. -1 if there is none.
  int ReleaseStdout();
  int ReleaseStderr();
  int ReleaseExtra();
  void CloseStdin();

  // Blocks until the child exits and reaps it (again: the saved status).
  ExitStatus Wait();
  // Reaps the child if it has exited; nullopt while it runs.
  std::optional<ExitStatus> TryWait();
  // Waits up to timeout_s; nullopt if it still runs then.
  std::optional<ExitStatus> WaitFor(double timeout_s);
  bool reaped() const { return reaped_; }

  // kill(pid, sig) unless already reaped (the pid may belong to someone else by then).
  void Signal(int sig);
  // kill(-pid, sig): the child's whole process group; nothing unless it leads one
  // (kOwnGroup/kOwnSession).
  // Sent even after the leader was reaped: its helpers may outlive it, and the kernel does not
  // reuse a pid while a group of that id still has members.
  void SignalGroup(int sig);

 private:
  void CloseAll();

  pid_t pid_ = -1;
  bool own_group_ = false;
  bool reaped_ = false;
  ExitStatus status_;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1, extra_fd_ = -1;
};

struct CapturedRun {
  ExitStatus status;
  bool timed_out = false;  // killed (SIGKILL) at the deadline
  std::string out, err;    // what the child wrote to its Stdio::Pipe stdout / stderr
  double seconds = 0;      // from the call to the reap
};

// Reads the child's piped stdout and stderr until both close, then reaps it. At timeout_s the
// child (its group, when it leads one) is killed with SIGKILL and reaped; what it wrote so far
// is kept.
CapturedRun CaptureOutput(Subprocess& child, double timeout_s);
// Spawn + CaptureOutput. Streams the options leave as kInherit are captured (stdout and stderr
// as pipes; stdin from /dev/null).
Result<CapturedRun> RunAndCapture(SpawnOptions options, double timeout_s);

}  // namespace codl
