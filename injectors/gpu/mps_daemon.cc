#include "injectors/gpu/mps_daemon.h"

#include "injectors/core/scratch.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "injectors/gpu/gpu_probe.h"
#include "injectors/gpu/mps_start.h"
#include "lib/common/subprocess.h"

namespace codl::injectors::gpu {
namespace {

// The daemon creates sockets under the pipe dir; leave room for its own names (sun_path is 108).
constexpr size_t kMaxPipeDirLength = 80;

std::vector<long> ParsePids(const std::string& text) {
  std::vector<long> pids;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    char* end = nullptr;
    const long v = std::strtol(tok.c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && v > 0) pids.push_back(v);
  }
  return pids;
}

}  // namespace

MpsDirs ResolveMpsDirs(const std::string& pipe_option, const std::string& log_option,
                       const std::vector<std::string>& scratch_roots) {
  MpsDirs d;
  d.scratch_roots = scratch_roots;
  const std::string base =
      scratch_roots.empty() ? std::string("/tmp/codl-mps") : scratch_roots.front() + "/codl-mps";
  d.pipe_dir = pipe_option.empty() ? base + "/pipe" : pipe_option;
  if (!log_option.empty()) {
    d.log_dir = log_option;
  } else {
    d.log_dir = pipe_option.empty() ? base + "/log" : pipe_option + "-log";
  }
  return d;
}

Status CheckMpsPipeDir(const std::string& pipe_dir) {
  if (pipe_dir.empty() || pipe_dir.front() != '/') {
    return InvalidArgument("option 'pipe_dir': '" + pipe_dir + "' must be an absolute path");
  }
  if (pipe_dir.size() > kMaxPipeDirLength) {
    return InvalidArgument("option 'pipe_dir': '" + pipe_dir + "' is " +
                           std::to_string(pipe_dir.size()) +
                           " characters; MPS creates Unix sockets in it, keep it at most " +
                           std::to_string(kMaxPipeDirLength));
  }
  return Status::Ok();
}

bool MpsControlRunning(const std::string& pipe_dir) {
  const std::string path = pipe_dir + "/control";
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& input, double timeout_s, bool capture) {
  if (argv.empty()) return Err("RunProcess: empty argv");
  SpawnOptions o;
  o.argv = argv;
  o.env = env;
  o.group = SpawnOptions::Group::kOwnSession;  // a daemon it starts must not share our group
  o.in = Stdio::Input(input);                  // (the agent kills codl-inject's group)
  o.out = capture ? Stdio::Pipe() : Stdio::Null();
  o.err = capture ? Stdio::SameAsStdout() : Stdio::Null();
  auto run = RunAndCapture(o, timeout_s);
  if (!run.ok()) return run.status();
  ProcessResult result;
  result.timed_out = run->timed_out;
  result.output = std::move(run->out);
  result.exit_code = run->status.exited && !run->timed_out ? run->status.code : -1;
  return result;
}

std::map<std::string, std::string> MpsControl::Env() const {
  return {{"CUDA_MPS_PIPE_DIRECTORY", dirs_.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", dirs_.log_dir}};
}

Result<std::unique_ptr<MpsControl>> MpsControl::Acquire(const MpsDirs& dirs, bool may_start,
                                                        const StopToken& stop) {
  if (Status p = CheckMpsPipeDir(dirs.pipe_dir); !p.ok()) return p;
  const std::string binary = FindOnPath("nvidia-cuda-mps-control");
  if (binary.empty()) return Err("nvidia-cuda-mps-control not found on PATH");
  std::unique_ptr<MpsControl> control(new MpsControl(dirs, binary));
  if (MpsControlRunning(dirs.pipe_dir)) return control;  // someone else's: use, never quit
  if (!may_start) {
    return Err("no MPS control daemon is listening on " + dirs.pipe_dir +
               "/control and start_daemon=false");
  }
  // Created beneath a scratch root by descriptor (no symlink followed), owned by us and not
  // writable by others: the daemon we start trusts what it finds there. 0755: victims running
  // as another user still reach the pipe.
  for (const std::string* dir : {&dirs.pipe_dir, &dirs.log_dir}) {
    if (Status s = MakePrivateDirBeneath(*dir, dirs.scratch_roots, 0755); !s.ok()) {
      return Error{"mps_cotenant: MPS directory " + s.error() +
                       " (a daemon this injector starts keeps its directories under a scratch "
                       "root)",
                   s.code()};
    }
  }
  // Check-and-start under a lock (mps_start.h); held until the socket is up, so whoever waited
  // for it finds the daemon and joins it.
  auto lock = MpsStartLock::Take(dirs.pipe_dir, 60, stop);
  if (!lock.ok()) return lock.status();
  if (MpsControlRunning(dirs.pipe_dir)) return control;
  const std::string env_binary = FindOnPath("env");
  if (env_binary.empty()) return Err("env not found on PATH (starts the MPS daemon)");
  // -d forks the daemon and returns; its output goes to control.log, not to our pipes.
  auto run = RunProcess(MpsDaemonStartArgv(binary, env_binary), control->Env(), "", 15,
                        /*capture=*/false);
  if (!run.ok()) return run.status().WithContext("starting " + binary + " -d");
  // A daemon started outside codl (no lock) between the check and -d: join it.
  if (run->exit_code != 0 && MpsControlRunning(dirs.pipe_dir)) return control;
  if (run->timed_out || run->exit_code != 0) {
    return Err(binary + " -d " +
               (run->timed_out ? "did not return within 15s"
                               : "exited with code " + std::to_string(run->exit_code)) +
               control->LogTail());
  }
  control->started_ = true;  // from here on the destructor quits it, even if we fail below
  const double deadline = MonotonicSeconds() + 10;
  while (!MpsControlRunning(dirs.pipe_dir)) {
    if (MonotonicSeconds() > deadline) {
      return Err("the MPS control daemon did not open " + dirs.pipe_dir + "/control within 10s" +
                 control->LogTail());
    }
    if (stop.SleepFor(0.02)) return Err("stopped while starting the MPS control daemon");
  }
  return control;
}

MpsControl::~MpsControl() {
  if (!started_) return;
  // No way to return an error from here: say it where the operator reads (stderr, not the
  // JSON-lines stdout).
  if (Status s = QuitIfUnused(); !s.ok())
    std::fprintf(stderr, "mps_cotenant: %s\n", s.error().c_str());
}

Result<std::string> MpsControl::Command(const std::string& command, double timeout_s) const {
  auto run = RunProcess({binary_}, Env(), command + "\n", timeout_s);
  if (!run.ok()) return run.status();
  if (run->timed_out) return Err("'" + command + "' to the MPS control daemon timed out");
  if (run->exit_code != 0) {
    return Err("'" + command + "' to the MPS control daemon failed (exit " +
               std::to_string(run->exit_code) + "): " + run->output);
  }
  return run->output;
}

Result<std::vector<long>> MpsControl::Clients() const {
  auto servers = Command("get_server_list");
  if (!servers.ok()) return servers.status();
  std::vector<long> all;
  for (long server : ParsePids(*servers)) {
    auto clients = Command("get_client_list " + std::to_string(server));
    if (!clients.ok()) return clients.status();
    for (long c : ParsePids(*clients)) all.push_back(c);
  }
  return all;
}

bool MpsControl::HasClient(pid_t pid) const {
  auto clients = Clients();
  if (!clients.ok()) return false;
  for (long c : *clients) {
    if (c == pid) return true;
  }
  return false;
}

Status MpsControl::QuitIfUnused() {
  if (!started_) return Status::Ok();
  const std::string how = "; quit it with: echo quit | CUDA_MPS_PIPE_DIRECTORY=" + dirs_.pipe_dir +
                          " nvidia-cuda-mps-control";
  auto clients = Clients();
  if (!clients.ok()) {
    started_ = false;
    return Err("left the MPS control daemon in " + dirs_.pipe_dir +
               " running: its client list could not be read (" + clients.error() + ")" + how);
  }
  std::string others;
  for (long c : *clients) {
    if (c != getpid()) others += (others.empty() ? "" : ", ") + std::to_string(c);
  }
  if (!others.empty()) {
    started_ = false;
    return Err("left the MPS control daemon in " + dirs_.pipe_dir + " running: processes " +
               others + " (the victim?) still use it" + how);
  }
  return Quit();
}

Status MpsControl::Quit() {
  auto r = Command("quit", 15);
  started_ = false;
  if (!r.ok()) return r.status();
  const double deadline = MonotonicSeconds() + 10;
  while (MpsControlRunning(dirs_.pipe_dir)) {
    if (MonotonicSeconds() > deadline) {
      return Err("the MPS control daemon still listens on " + dirs_.pipe_dir +
                 "/control 10s after quit");
    }
    usleep(20000);
  }
  return Status::Ok();
}

std::string MpsControl::LogTail() const {
  std::string all;
  // server.log usually holds the cause (a failed server start); control.log the sequence.
  for (const char* name : {"server.log", "control.log"}) {
    std::ifstream in(dirs_.log_dir + "/" + name);
    if (!in) continue;
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) {
      lines.push_back(line);
      if (lines.size() > 5) lines.erase(lines.begin());
    }
    std::string tail;
    for (const auto& l : lines) tail += "\n  " + l;
    if (!lines.empty()) all += "; " + dirs_.log_dir + "/" + name + " ends with:" + tail;
  }
  return all;
}

}  // namespace codl::injectors::gpu
