#include "agent/victim_runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <spdlog/spdlog.h>

#include "agent/child_process.h"
#include "agent/placement.h"
#include "lib/common/compress.h"

namespace codl::agent {
namespace {
bool HoldsCodlPackage(const std::string& dir) {
  struct stat st {};
  return !dir.empty() && stat((dir + "/codl/__init__.py").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
// A private directory for the victim's profiler trace (victim.trace): made by the agent, given
// to the victim's user, and read back through a descriptor taken when it was made, with
// O_NOFOLLOW and an owner check, so that nothing the victim renames, links or puts in its place
// makes the agent read (and ship) another file.
class TraceDir {
 public:
  TraceDir(const std::optional<RunAs>& run_as, std::string* error) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "codl-trace-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      *error = std::string("cannot create a directory for the trace: ") + std::strerror(errno);
      return;
    }
    path_ = tmpl;
    fd_ = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    owner_ = run_as ? run_as->uid : geteuid();
    if (fd_ < 0 || (run_as && fchown(fd_, run_as->uid, run_as->gid) != 0)) {
      *error = std::string("cannot prepare the trace directory: ") + std::strerror(errno);
      Remove();
    }
  }
  ~TraceDir() { Remove(); }
  bool ok() const { return fd_ >= 0; }
  std::string file() const { return path_ + "/trace.json"; }

  // The trace, compressed, into `out`; or why not into out->trace_error.
  void Collect(VictimOutcome* out) const {
    const int f = openat(fd_, "trace.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) {
      out->trace_error = errno == ENOENT
                             ? "the victim wrote no trace (victim.trace needs `python3 -m "
                               "codl.run` and torch with its profiler)"
                             : std::string("cannot open the trace: ") + std::strerror(errno);
      return;
    }
    struct stat st {};
    std::string data;
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner_) {
      out->trace_error = "the trace is not a regular file of the victim's user: not read";
    } else if (static_cast<size_t>(st.st_size) > kMaxTraceRawBytes) {
      out->trace_error = "the trace is " + std::to_string(st.st_size >> 20) + " MiB, above the " +
                         std::to_string(kMaxTraceRawBytes >> 20) +
                         " MiB kept: trace fewer steps (victim.trace.steps)";
    } else {
      char buf[1 << 16];
      ssize_t n;
      while ((n = read(f, buf, sizeof buf)) > 0 && data.size() <= kMaxTraceRawBytes)
        data.append(buf, static_cast<size_t>(n));
      auto z = ZlibCompress(data);
      if (!z.ok()) {
        out->trace_error = z.error();
      } else if (z->size() > kMaxTraceZlibBytes) {
        out->trace_error = "the trace is " + std::to_string(z->size() >> 20) +
                           " MiB compressed, above the " +
                           std::to_string(kMaxTraceZlibBytes >> 20) +
                           " MiB kept: trace fewer steps (victim.trace.steps)";
      } else {
        out->trace_zlib = std::move(*z);
        out->trace_raw_bytes = static_cast<int64_t>(data.size());
      }
    }
    close(f);
  }

 private:
  void Remove() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);  // a symlink is not followed
    path_.clear();
  }
  std::string path_;
  int fd_ = -1;
  uid_t owner_ = 0;
};

// A victim's private HOME for one trial (clean environment): ROOT/codl-homes/home-XXXXXX, mode
// 0700, owned by the victim's user; ROOT/codl-homes is the agent's, 0711 (a victim reaches its
// own HOME but cannot list the others). Removed, with all the victim left in it, after the trial.
class HomeDir {
 public:
  HomeDir(const std::string& root, const std::optional<RunAs>& run_as, std::string* error) {
    const std::string base =
        (root.empty() ? std::filesystem::temp_directory_path().string() : root) + "/codl-homes";
    if (mkdir(base.c_str(), 0711) != 0 && errno != EEXIST) {
      *error = "cannot create " + base + ": " + std::strerror(errno);
      return;
    }
    struct stat st {};
    if (lstat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
      *error = base + " is not a directory of the agent's user: victims' HOMEs are not made there";
      return;
    }
    chmod(base.c_str(), 0711);
    std::string tmpl = base + "/home-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      *error = "cannot create the victim's HOME under " + base + ": " + std::strerror(errno);
      return;
    }
    path_ = tmpl;
    if (run_as && chown(path_.c_str(), run_as->uid, run_as->gid) != 0) {
      *error = "cannot give the victim's HOME to " + run_as->user + ": " + std::strerror(errno);
      Remove();
    }
  }
  ~HomeDir() { Remove(); }
  const std::string& path() const { return path_; }

 private:
  void Remove() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);  // a symlink is not followed
    path_.clear();
  }
  std::string path_;
};

// The victim child's argv, environment (clean with a HOME of its own, or the agent's; the
// experiment's; the codl package on PYTHONPATH; the trace's variables), directory and user.
// Fails only when its HOME cannot be made; a trace directory that cannot is said in
// `trace_error` and the victim runs untraced.
Status SetUpChild(const experiment::VictimSpec& spec, const VictimIdentity& identity,
                  const std::optional<RunAs>& run_as, ChildProcess::Options* o,
                  std::unique_ptr<HomeDir>* home, std::unique_ptr<TraceDir>* trace,
                  std::string* trace_error) {
  o->argv = spec.command;
  if (identity.clean_env) {
    std::string error;
    *home = std::make_unique<HomeDir>(identity.home_root, run_as, &error);
    if (!error.empty()) return Err(error);
    o->inherit_env = false;
    o->env = CleanVictimEnvironment(identity.env_keep, (*home)->path());
  }
  for (const auto& [k, v] : spec.env) o->env[k] = v;
  if (const std::string py = CodlPythonDir(); !py.empty()) {
    // Clean: the victim's own PYTHONPATH (or a kept one) only; else the agent's as well.
    o->env["PYTHONPATH"] = identity.clean_env ? VictimPythonPath(py, o->env, /*inherited=*/"")
                                              : VictimPythonPath(py, spec.env);
  }
  o->workdir = spec.workdir;
  o->run_as = run_as;
  if (spec.trace_steps > 0) {
    *trace = std::make_unique<TraceDir>(run_as, trace_error);
    if ((*trace)->ok()) {
      o->env["CODL_TRACE_STEPS"] = std::to_string(spec.trace_steps);
      o->env["CODL_TRACE_FILE"] = (*trace)->file();
    }
  }
  o->stderr_tail_bytes = 4096;
  return Status::Ok();
}

// Waits for the victim's exit, its timeout (timeout_s; 0: 600 s) or `cancel`, sampling the
// node's counters meanwhile, then stops it if it still runs and fills in what its end tells.
// Returns whether it was cancelled.
bool WaitForVictim(ChildProcess& child, const Clock& clock, double t0, double timeout_s,
                   const std::atomic<bool>* cancel, NodeTelemetrySampler* telemetry,
                   VictimOutcome* out) {
  const double timeout = timeout_s > 0 ? timeout_s : 600;
  bool cancelled = false;
  while (!child.WaitFor(0.1)) {
    telemetry->Tick(clock.MonotonicSeconds());
    if (clock.MonotonicSeconds() - t0 > timeout) {
      out->timed_out = true;
      break;
    }
    if (cancel && cancel->load()) {
      cancelled = true;
      break;
    }
  }
  if (out->timed_out || cancelled) child.Terminate(2.0);
  out->telemetry = telemetry->Finish(clock.MonotonicSeconds());
  out->telemetry_measured = true;
  out->wall_s = clock.MonotonicSeconds() - t0;
  out->exit_code = child.exit_code();
  out->stderr_tail = child.stderr_tail();
  out->cpu_s = child.cpu_seconds();
  out->effective_cpus = child.effective_cpus();
  return cancelled;
}

}  // namespace

std::map<std::string, std::string> CleanVictimEnvironment(const std::vector<std::string>& keep,
                                                          const std::string& home) {
  std::map<std::string, std::string> env;
  auto from_agent = [](const char* name, const char* fallback) {
    const char* v = getenv(name);
    return std::string(v != nullptr && *v != '\0' ? v : fallback);
  };
  env["PATH"] = from_agent("PATH", "/usr/local/bin:/usr/bin:/bin");
  env["LANG"] = from_agent("LANG", "C.UTF-8");
  for (const std::string& name : keep) {
    if (const char* v = getenv(name.c_str()); v != nullptr && !IsSecretEnv(name)) env[name] = v;
  }
  env["HOME"] = home;
  env["TMPDIR"] = home;
  return env;
}

std::string CodlPythonDir() {
  if (const char* env = getenv("CODL_PYTHON_DIR"); env != nullptr && HoldsCodlPackage(env))
    return env;
  const std::string self = SelfDirectory();
  const std::string installed = self + "/../share/codl/python";
  if (HoldsCodlPackage(installed)) return installed;
  std::ifstream in(self + "/codl-python-path");
  std::string tree;
  if (std::getline(in, tree) && HoldsCodlPackage(tree)) return tree;
  return "";
}

std::string VictimPythonPath(const std::string& dir,
                             const std::map<std::string, std::string>& victim_env,
                             std::optional<std::string> inherited) {
  std::string rest;
  if (auto it = victim_env.find("PYTHONPATH"); it != victim_env.end()) {
    rest = it->second;
  } else if (inherited) {
    rest = *inherited;
  } else if (const char* env = getenv("PYTHONPATH"); env != nullptr) {
    rest = env;
  }
  return rest.empty() ? dir : dir + ":" + rest;
}

VictimOutcome VictimRunner::Run(const experiment::VictimSpec& spec, const std::atomic<bool>* cancel,
                                const std::function<void(const VictimStep&)>& on_step,
                                const std::function<void(const DatasetProgress&)>& on_dataset,
                                const std::optional<RunAs>& run_as_override) {
  VictimOutcome out;
  const std::optional<RunAs>& run_as = run_as_override ? run_as_override : identity_.run_as;
  ProgressParser parser(spec.progress, spec.warmup_steps);
  // The progress channel (CODL_PROGRESS_FD) carries CoDL jsonl records whatever stdout's
  // format is; once it has said anything, stdout is the job's own and no longer parsed.
  experiment::ProgressSpec channel_spec;
  if (spec.progress.format == experiment::ProgressSpec::Format::kJsonl)
    channel_spec = spec.progress;
  ProgressParser channel(channel_spec, spec.warmup_steps);
  bool channel_used = false;
  std::mutex parser_mu;
  const double t0 = clock_->MonotonicSeconds();
  out.started_unix_ns = clock_->UnixNanos();

  auto NotStarted = [&out](const std::string& why) {
    out.exit_code = 127;
    out.progress.ok = false;
    out.progress.error = std::string(kVictimNotStarted) + why;
    return out;
  };
  if (!spec.cache.paths.empty()) {
    // Before every trial, baselines too: what the victim finds in memory is chosen, not chance.
    // Bounded, confined beneath the roots, and no further than the victim could read itself.
    auto cache = PrepareCache(
        spec.cache, CacheScope{identity_.cache_roots, run_as, identity_.cache_limits}, cancel);
    if (!cache.ok()) return NotStarted(cache.error());
    out.cache = *cache;
    out.cache_measured = true;
  }
  ChildProcess::Options o;
  std::unique_ptr<HomeDir> home;
  std::unique_ptr<TraceDir> trace;
  if (Status s = SetUpChild(spec, identity_, run_as, &o, &home, &trace, &out.trace_error);
      !s.ok()) {
    return NotStarted(s.error());
  }
  auto on_line = [&](ProgressParser& p, std::string_view line) {
    const auto kind = p.OnStdoutLine(line, clock_->MonotonicSeconds() - t0);
    if (on_step && kind == ProgressParser::LineKind::kStep) on_step(p.steps().back());
    if (on_dataset && kind == ProgressParser::LineKind::kDataset && p.dataset().total > 0)
      on_dataset(p.dataset());
  };
  o.on_stdout = [&](std::string_view line) {
    std::lock_guard<std::mutex> l(parser_mu);
    if (!channel_used) on_line(parser, line);
  };
  if (spec.progress.format != experiment::ProgressSpec::Format::kWall) {
    o.on_progress = [&](std::string_view line) {
      std::lock_guard<std::mutex> l(parser_mu);
      channel_used = true;
      on_line(channel, line);
    };
  }
  std::shared_ptr<ChildPlacement> placed;  // kept past the child: its cgroup's page cache
  if (placer_) {
    auto placement = placer_->Prepare(spec.placement, "victim");
    if (!placement.ok()) return NotStarted(placement.error());
    placed = *placement;
    o.placement = *placement;
  } else if (!spec.placement.empty()) {
    return NotStarted("this agent cannot place children (cpus/numa)");
  }
  // The node's counters over the victim's run: read just before its spawn and after its exit.
  NodeTelemetrySampler telemetry;
  telemetry.Start(clock_->MonotonicSeconds());
  auto child = ChildProcess::Spawn(std::move(o));
  if (!child.ok()) return NotStarted(child.error());
  const bool cancelled =
      WaitForVictim(**child, *clock_, t0, spec.timeout_s, cancel, &telemetry, &out);
  child->reset();  // joins the reader: no more OnStdoutLine calls after this
  if (spec.cache.mode == "cold" && placed && placed->cgroup) {
    // With the memory controller delegated, cold also drops what the victim left in the page
    // cache outside cache.paths (its libraries, its other files), charged to its cgroup.
    if (auto freed = placed->cgroup->ReclaimMemory(); freed.ok()) {
      spdlog::info("victim.cache cold: reclaimed {} bytes charged to the victim's cgroup", *freed);
    } else {
      spdlog::debug("victim.cache cold: no cgroup reclaim: {}", freed.error());
    }
  }
  placed.reset();
  if (trace && trace->ok()) trace->Collect(&out);
  out.progress = (channel_used ? channel : parser)
                     .Finish(out.exit_code, out.timed_out, out.wall_s, out.stderr_tail);
  if (cancelled) {
    out.progress.ok = false;
    out.progress.error = "victim cancelled";
  }
  spdlog::info("victim {} finished: exit {}, wall {:.2f} s, {:.2f} cores on CPUs {}, {}",
               spec.command.front(), out.exit_code, out.wall_s,
               out.wall_s > 0 ? out.cpu_s / out.wall_s : 0.0, out.effective_cpus,
               out.progress.ok ? "ok" : FailureWithStderr(out.progress.error, out.stderr_tail));
  return out;
}

}  // namespace codl::agent
