#include "tests/integration/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace codl::testing {

std::string BinDir() {
  if (const char* d = getenv("CODL_BIN_DIR")) return d;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string p(buf, n > 0 ? n : 0);
  return p.substr(0, p.rfind('/'));
}

std::string SourceDir() {
  if (const char* d = getenv("CODL_SOURCE_DIR")) return d;
  return CODL_TEST_SOURCE_DIR;
}

std::string Bin(const std::string& name) { return BinDir() + "/" + name; }

std::string MakeTempDir(const std::string& prefix) {
  std::string t = "/tmp/" + prefix + "-XXXXXX";
  if (!mkdtemp(t.data())) abort();
  return t;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

Process::Process(const std::vector<std::string>& argv, const std::string& log_path,
                 const std::string& cwd, const std::map<std::string, std::string>& env) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves nothing behind
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    Wait(10);
  }
}

Process::Process(Process&& o) noexcept { *this = std::move(o); }

Process& Process::operator=(Process&& o) noexcept {
  std::swap(pid_, o.pid_);
  std::swap(reaped_, o.reaped_);
  std::swap(status_, o.status_);
  return *this;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

int Process::Wait(double timeout_s) {
  if (pid_ <= 0) return -1000;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!reaped_) {
    pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() > end) return -1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_);
}

bool Process::Running() {
  if (pid_ <= 0 || reaped_) return false;
  return Wait(0) == -1000;
}

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         const std::string& cwd) {
  std::string dir = MakeTempDir("codl-cmd");
  CommandResult r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int o = open((dir + "/out").c_str(), O_WRONLY | O_CREAT, 0644);
    int e = open((dir + "/err").c_str(), O_WRONLY | O_CREAT, 0644);
    dup2(o, 1);
    dup2(e, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  r.out = ReadFile(dir + "/out");
  r.err = ReadFile(dir + "/err");
  RemoveTree(dir);
  return r;
}

namespace {
std::string Cmdline(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : s) if (c == '\0') c = ' ';
  return s;
}
pid_t ParentOf(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return -1;
  std::stringstream ss(s.substr(rp + 2));
  std::string state;
  pid_t ppid = -1;
  ss >> state >> ppid;
  return ppid;
}
std::vector<pid_t> AllPids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    char* end;
    long v = strtol(e->d_name, &end, 10);
    if (*end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}
bool IsZombie(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && s[rp + 2] == 'Z';
}
}  // namespace

std::vector<pid_t> DescendantsMatching(pid_t root, const std::string& needle) {
  std::vector<pid_t> out;
  for (pid_t p : AllPids()) {
    if (IsZombie(p)) continue;
    for (pid_t a = ParentOf(p), hops = 0; a > 1 && hops < 16; a = ParentOf(a), ++hops) {
      if (a == root) {
        if (Cmdline(p).find(needle) != std::string::npos) out.push_back(p);
        break;
      }
    }
  }
  return out;
}

std::vector<pid_t> ProcessesMatching(const std::string& needle) {
  std::vector<pid_t> out;
  for (pid_t p : AllPids()) {
    if (p == getpid() || IsZombie(p)) continue;
    if (Cmdline(p).find(needle) != std::string::npos) out.push_back(p);
  }
  return out;
}

}  // namespace codl::testing
