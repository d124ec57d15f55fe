#include "agent/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <sstream>

#include "agent/child_guard.h"
#include "agent/cpu_usage.h"
#include "agent/subreaper.h"
#include "lib/common/clock.h"
#include "lib/common/cpu_list.h"
#include "lib/common/utf8.h"

namespace codl::agent {
namespace {

// The one thread that forks. It lives for the whole process (never exits), so PDEATHSIG only
// fires when the agent process itself dies.
class Spawner {
 public:
  static Spawner& Get() {
    static Spawner* s = new Spawner();  // leaked on purpose: must outlive every child
    return *s;
  }
  template <class F>
  auto Run(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto fut = task.get_future();
    {
      std::lock_guard<std::mutex> l(mu_);
      tasks_.push_back([&task] { task(); });
    }
    cv_.notify_one();
    return fut.get();
  }

 private:
  Spawner() {
    std::thread([this] {
      for (;;) {
        std::function<void()> t;
        {
          std::unique_lock<std::mutex> l(mu_);
          cv_.wait(l, [this] { return !tasks_.empty(); });
          t = std::move(tasks_.front());
          tasks_.pop_front();
        }
        t();
      }
    }).detach();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
};

// Registry of live ChildProcess objects for LiveChildren().
std::mutex& LiveMu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::set<ChildProcess*>& Live() {
  static auto* live = new std::set<ChildProcess*>();
  return *live;
}

bool IsExecutable(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string SelfDirectory() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, n);
  return p.substr(0, p.rfind('/'));
}

std::string ResolveExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return IsExecutable(name) ? name : "";
  std::string beside = SelfDirectory() + "/" + name;
  if (IsExecutable(beside)) return beside;
  const char* path = getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string p = dir + "/" + name;
    if (IsExecutable(p)) return p;
  }
  return "";
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(Options options) {
  if (options.argv.empty()) return Err("empty command");
  std::string exe = ResolveExecutable(options.argv[0]);
  if (exe.empty()) {
    return Err("command '" + options.argv[0] + "' not found (looked beside " + SelfDirectory() +
               " and on PATH)");
  }
  if (!options.workdir.empty() && !options.run_as) {
    struct stat st {};
    if (stat(options.workdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Err("working directory '" + options.workdir + "' does not exist");
    }
  }
  SpawnOptions spawn;
  spawn.argv = options.argv;
  spawn.executable = exe;
  spawn.env = options.env;
  spawn.inherit_env = options.inherit_env;
  // Inherited by all it starts: whose an orphan re-parented to the agent is (subreaper.h).
  const std::string tag = NewChildTag();
  spawn.env[kChildTagEnv] = tag;
  spawn.cwd = options.workdir;
  spawn.run_as = options.run_as;
  spawn.group = SpawnOptions::Group::kOwnGroup;  // Terminate/Kill reach its helpers too
  spawn.death_signal = SIGKILL;
  spawn.in = Stdio::Null();
  spawn.out = Stdio::Pipe();
  spawn.err = Stdio::Pipe();
  if (options.on_progress) {
    spawn.extra_out_fd = kProgressFd;
    spawn.env[kProgressFdEnv] = std::to_string(kProgressFd);
  }
  const std::shared_ptr<ChildPlacement> placement = options.placement;
  const Cgroup* cgroup = placement ? placement->cgroup.get() : nullptr;
  if (cgroup) spawn.cgroup_procs_fd = cgroup->procs_fd();
  ChildGuard guard;
  auto proc = Spawner::Get().Run([&]() -> Result<Subprocess> {
    // Affinity mode: the fork inherits the spawner thread's CPUs and memory policy.
    std::optional<ScopedThreadPlacement> pin;
    if (placement && !cgroup) {
      pin.emplace(placement->resolved);
      if (!pin->error().empty()) return Err(pin->error());
    }
    auto forks = LockForks();  // no sweep takes it for an orphan before it is registered
    auto p = Subprocess::Spawn(spawn);
    if (!p.ok()) return p;
    RegisterChild(p->pid(), tag);
    // Outlives a killed agent just long enough to end the child's tree (child_guard.h).
    auto g = ChildGuard::Start(p->pid(), tag, cgroup ? cgroup->path() : std::string());
    if (!g.ok()) {
      p->SignalGroup(SIGKILL);
      p->Wait();
      ForgetChild(p->pid());
      return g.status();
    }
    guard = std::move(*g);
    return p;
  });
  if (!proc.ok()) return proc.status();
  std::unique_ptr<ChildProcess> c(new ChildProcess());
  c->options_ = std::move(options);
  c->tag_ = tag;
  c->proc_ = std::move(*proc);
  c->guard_ = std::move(guard);
  c->spawned_s_ = SteadySeconds();
  c->start_ticks_ = ProcessStartTicks(c->proc_.pid());
  c->placement_ = placement;
  c->options_.placement.reset();  // one owner: placement_ (released last, in the destructor)
  const std::string cgroup_cpus = cgroup ? cgroup->EffectiveCpus() : std::string();
  c->effective_cpus_ =
      !cgroup_cpus.empty() ? cgroup_cpus : codl::FormatCpuList(AffinityOf(c->proc_.pid()));
  ChildProcess* raw = c.get();
  const int out = c->proc_.ReleaseStdout(), err = c->proc_.ReleaseStderr();
  const int progress = c->proc_.ReleaseExtra();
  c->reader_ = std::thread([raw, out, err, progress] { raw->ReaderLoop(out, err, progress); });
  {
    std::lock_guard<std::mutex> l(LiveMu());
    Live().insert(raw);
  }
  return c;
}

std::vector<std::pair<pid_t, uint64_t>> LiveChildren() {
  std::lock_guard<std::mutex> l(LiveMu());
  std::vector<std::pair<pid_t, uint64_t>> out;
  for (ChildProcess* c : Live()) {
    if (!c->exited()) out.emplace_back(c->pid(), c->start_time_ticks());
  }
  // What they daemonized: each leads its own group after setsid (or is killed alone).
  for (const auto& orphan : AdoptedOrphans()) out.push_back(orphan);
  return out;
}

void ChildProcess::ReaderLoop(int out_fd, int err_fd, int progress_fd) {
  // Line buffers of stdout (0) and the progress pipe (2); stderr (1) only keeps its tail.
  std::string line_buf[3];
  const std::function<void(std::string_view)>* sinks[3] = {&options_.on_stdout, nullptr,
                                                           &options_.on_progress};
  pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {progress_fd, POLLIN, 0}};
  int open_fds = 0;
  for (const pollfd& p : fds) open_fds += p.fd >= 0 ? 1 : 0;
  char buf[8192];
  while (open_fds > 0) {
    // stdout and stderr closed but the progress pipe open: the child has most likely ended, and
    // a daemonized descendant (which redirected only 0-2) still holds the pipe. Take what is
    // there and stop, so that the child is reaped and its descendants can be killed.
    if (fds[0].fd < 0 && fds[1].fd < 0 && fds[2].fd >= 0) {
      fcntl(fds[2].fd, F_SETFL, fcntl(fds[2].fd, F_GETFL) | O_NONBLOCK);
      ssize_t n;
      while ((n = read(fds[2].fd, buf, sizeof buf)) > 0) line_buf[2].append(buf, n);
      size_t pos;
      while ((pos = line_buf[2].find('\n')) != std::string::npos) {
        if (*sinks[2]) (*sinks[2])(std::string_view(line_buf[2].data(), pos));
        line_buf[2].erase(0, pos + 1);
      }
      close(fds[2].fd);
      fds[2].fd = -1;
      break;
    }
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 3; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
        continue;
      }
      if (i != 1) {
        std::string& lb = line_buf[i];
        lb.append(buf, n);
        size_t pos;
        while ((pos = lb.find('\n')) != std::string::npos) {
          if (*sinks[i]) (*sinks[i])(std::string_view(lb.data(), pos));
          lb.erase(0, pos + 1);
        }
        if (lb.size() > (1 << 20)) lb.clear();  // a runaway line is not progress
      } else {
        std::lock_guard<std::mutex> l(mu_);
        stderr_tail_.append(buf, n);
        if (stderr_tail_.size() > options_.stderr_tail_bytes) {
          stderr_tail_.erase(0, stderr_tail_.size() - options_.stderr_tail_bytes);
        }
      }
    }
  }
  for (int i : {0, 2}) {
    if (!line_buf[i].empty() && *sinks[i]) (*sinks[i])(line_buf[i]);
  }
  const ExitStatus status = proc_.Wait();  // the only thread that reaps
  ForgetChild(proc_.pid());
  std::lock_guard<std::mutex> l(mu_);
  exited_s_ = SteadySeconds();
  wait_cpu_s_ = status.user_cpu_s + status.system_cpu_s;
  exited_ = true;
  exit_code_ = status.CodeOrNegativeSignal();
  cv_.notify_all();
}

bool ChildProcess::WaitFor(double timeout_s) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, std::chrono::duration<double>(timeout_s), [this] { return exited_; });
}

bool ChildProcess::exited() const {
  std::lock_guard<std::mutex> l(mu_);
  return exited_;
}

int ChildProcess::exit_code() const {
  std::lock_guard<std::mutex> l(mu_);
  return exit_code_;
}

std::string ChildProcess::stderr_tail() const {
  std::lock_guard<std::mutex> l(mu_);
  // The kept tail may start or end inside a character, and a child may print any bytes: repaired
  // here, because the tail goes into proto string fields (which must be UTF-8).
  return Utf8Tail(stderr_tail_, stderr_tail_.size());
}

double ChildProcess::cpu_seconds() const {
  if (placement_ && placement_->cgroup) {
    if (auto s = placement_->cgroup->CpuSeconds(); s.ok()) return *s;
  }
  std::lock_guard<std::mutex> l(mu_);
  return std::max(wait_cpu_s_, live_cpu_s_);
}

double ChildProcess::run_seconds() const {
  std::lock_guard<std::mutex> l(mu_);
  return (exited_ ? exited_s_ : SteadySeconds()) - spawned_s_;
}

void ChildProcess::SnapshotTreeCpu() {
  if (placement_ && placement_->cgroup) return;  // cpu.stat keeps everything
  // Descendants still running when the group is killed are reaped by init, not by the child,
  // so wait4 never sees their time: take it now.
  const double live = ProcessGroupCpuSeconds(proc_.pid());
  std::lock_guard<std::mutex> l(mu_);
  live_cpu_s_ = std::max(live_cpu_s_, live);
}

void ChildProcess::Terminate(double grace_s) {
  if (!exited()) {
    SnapshotTreeCpu();
    proc_.SignalGroup(SIGTERM);
  }
  if (!WaitFor(grace_s)) Kill();
}

void ChildProcess::Kill() {
  if (!exited()) {
    SnapshotTreeCpu();
    proc_.SignalGroup(SIGKILL);
    // Also what left the process group (setsid daemons): the cgroup holds the whole tree.
    if (placement_ && placement_->cgroup) placement_->cgroup->Kill();
  }
  ReleaseTag(tag_);  // and what left the group without a cgroup: orphans adopted by the agent
  WaitFor(10);
}

ChildProcess::~ChildProcess() {
  {
    std::lock_guard<std::mutex> l(LiveMu());
    Live().erase(this);
  }
  if (!exited()) proc_.SignalGroup(SIGKILL);
  // Before the join: a daemonized descendant may still hold the output pipes.
  ReleaseTag(tag_);
  if (reader_.joinable()) reader_.join();
  // The group may hold grandchildren that outlived the leader; make sure they go too.
  proc_.SignalGroup(SIGKILL);
  placement_.reset();  // the cgroup, if any: kills what is left in it and removes it
  guard_.Release();    // the tree is gone: its guard has nothing left to do
}

}  // namespace codl::agent
