#include "injectors/gpu/mps_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "injectors/gpu/gpu_probe.h"

extern char** environ;

namespace codl::injectors::gpu {
namespace {

// The daemon creates sockets under the pipe dir; leave room for its own names (sun_path is 108).
constexpr size_t kMaxPipeDirLength = 80;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// In the forked child only: async-signal-safe calls.
void CloseFrom(int lowest) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, lowest, ~0U, 0) == 0) return;
#endif
  const long max = sysconf(_SC_OPEN_MAX);
  for (long fd = lowest; fd < (max > 0 && max < 65536 ? max : 65536); ++fd)
    close(static_cast<int>(fd));
}

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

std::string CheckMpsPipeDir(const std::string& pipe_dir) {
  if (pipe_dir.empty() || pipe_dir.front() != '/') {
    return "option 'pipe_dir': '" + pipe_dir + "' must be an absolute path";
  }
  if (pipe_dir.size() > kMaxPipeDirLength) {
    return "option 'pipe_dir': '" + pipe_dir + "' is " + std::to_string(pipe_dir.size()) +
           " characters; MPS creates Unix sockets in it, keep it at most " +
           std::to_string(kMaxPipeDirLength);
  }
  return "";
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

std::string MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return "empty path";
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return Errno("mkdir " + prefix);
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return path + " is not a directory";
  return "";
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& input, double timeout_s, bool capture) {
  if (argv.empty()) return Err("RunProcess: empty argv");
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (env.count(kv.substr(0, kv.find('='))) == 0) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  if (input.size() > 4096) return Err("RunProcess: input larger than a pipe buffer");
  int in[2], out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0) return Err(Errno("pipe"));
  if (!input.empty() &&
      write(in[1], input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    close(in[0]);
    close(in[1]);
    return Err(Errno("write to pipe"));
  }
  close(in[1]);
  if (capture && pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    return Err(Errno("pipe"));
  }
  const int devnull = capture ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t pid = fork();
  if (pid < 0) {
    close(in[0]);
    if (capture) {
      close(out[0]);
      close(out[1]);
    }
    if (devnull >= 0) close(devnull);
    return Err(Errno("fork"));
  }
  if (pid == 0) {
    const int sink = capture ? out[1] : devnull;
    if (dup2(in[0], 0) < 0 || sink < 0 || dup2(sink, 1) < 0 || dup2(sink, 2) < 0) _exit(126);
    CloseFrom(3);
    setsid();  // a daemon it starts must not share our process group (the agent kills that)
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  if (devnull >= 0) close(devnull);
  ProcessResult result;
  const double deadline = MonotonicSeconds() + timeout_s;
  if (capture) {
    close(out[1]);
    while (true) {
      const double left = deadline - MonotonicSeconds();
      if (left <= 0) {
        result.timed_out = true;
        break;
      }
      pollfd p{out[0], POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (r <= 0) continue;
      char buf[4096];
      const ssize_t n = read(out[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      result.output.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
  }
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return Err(Errno("waitpid"));
    if (result.timed_out || MonotonicSeconds() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    usleep(2000);
  }
  result.exit_code = WIFEXITED(status) && !result.timed_out ? WEXITSTATUS(status) : -1;
  return result;
}

std::map<std::string, std::string> MpsControl::Env() const {
  return {{"CUDA_MPS_PIPE_DIRECTORY", dirs_.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", dirs_.log_dir}};
}

Result<std::unique_ptr<MpsControl>> MpsControl::Acquire(const MpsDirs& dirs, bool may_start,
                                                        const StopToken& stop) {
  if (std::string p = CheckMpsPipeDir(dirs.pipe_dir); !p.empty()) return Err(p);
  const std::string binary = FindOnPath("nvidia-cuda-mps-control");
  if (binary.empty()) return Err("nvidia-cuda-mps-control not found on PATH");
  std::unique_ptr<MpsControl> control(new MpsControl(dirs, binary));
  if (MpsControlRunning(dirs.pipe_dir)) return control;  // someone else's: use, never quit
  if (!may_start) {
    return Err("no MPS control daemon is listening on " + dirs.pipe_dir +
               "/control and start_daemon=false");
  }
  for (const std::string* dir : {&dirs.pipe_dir, &dirs.log_dir}) {
    if (std::string e = MakeDirs(*dir, 0755); !e.empty()) return Err("mps_cotenant: " + e);
  }
  // -d forks the daemon and returns; its output goes to control.log, not to our pipes.
  auto run = RunProcess({binary, "-d"}, control->Env(), "", 15, /*capture=*/false);
  if (!run.ok()) return Err("starting " + binary + " -d: " + run.error());
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
  if (started_) (void)Quit();
}

Result<std::string> MpsControl::Command(const std::string& command, double timeout_s) const {
  auto run = RunProcess({binary_}, Env(), command + "\n", timeout_s);
  if (!run.ok()) return Err(run.error());
  if (run->timed_out) return Err("'" + command + "' to the MPS control daemon timed out");
  if (run->exit_code != 0) {
    return Err("'" + command + "' to the MPS control daemon failed (exit " +
               std::to_string(run->exit_code) + "): " + run->output);
  }
  return run->output;
}

bool MpsControl::HasClient(pid_t pid) const {
  auto servers = Command("get_server_list");
  if (!servers.ok()) return false;
  for (long server : ParsePids(*servers)) {
    auto clients = Command("get_client_list " + std::to_string(server));
    if (!clients.ok()) continue;
    for (long c : ParsePids(*clients)) {
      if (c == pid) return true;
    }
  }
  return false;
}

Status MpsControl::Quit() {
  auto r = Command("quit", 15);
  started_ = false;
  if (!r.ok()) return Err(r.error());
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
  std::ifstream in(dirs_.log_dir + "/control.log");
  if (!in) return "";
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > 5) lines.erase(lines.begin());
  }
  std::string tail;
  for (const auto& l : lines) tail += "\n  " + l;
  return lines.empty() ? "" : "; " + dirs_.log_dir + "/control.log ends with:" + tail;
}

}  // namespace codl::injectors::gpu
