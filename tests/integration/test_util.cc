#include "tests/integration/test_util.h"

#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
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

void WriteSecretFile(const std::string& path, const std::string& content) {
  WriteFile(path, content);
  chmod(path.c_str(), 0600);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
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
  SpawnOptions o;
  o.argv = argv;
  o.env = env;
  o.cwd = cwd;
  o.death_signal = SIGKILL;  // a crashed test leaves nothing behind
  o.out = Stdio::File(log_path, /*append=*/true);
  o.err = Stdio::SameAsStdout();
  auto p = Subprocess::Spawn(o);
  if (!p.ok()) {
    fprintf(stderr, "test_util: %s\n", p.error().c_str());
    abort();  // the test cannot go on without its process
  }
  proc_ = std::move(*p);
}

Process::~Process() {
  if (pid() > 0 && !proc_.reaped()) {
    proc_.Signal(SIGKILL);
    Wait(10);
  }
}

void Process::Signal(int sig) { proc_.Signal(sig); }

int Process::Wait(double timeout_s) {
  if (pid() <= 0) return -1000;
  auto status = proc_.WaitFor(timeout_s);
  return status ? status->CodeOrNegativeSignal() : -1000;
}

bool Process::Running() { return pid() > 0 && !proc_.TryWait(); }

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         const std::string& cwd) {
  SpawnOptions o;
  o.argv = argv;
  o.cwd = cwd;
  o.death_signal = SIGKILL;
  CommandResult r;
  auto run = RunAndCapture(o, timeout_s);
  if (!run.ok()) {
    r.err = run.error();
    return r;
  }
  r.exit_code = run->status.CodeOrNegativeSignal();
  r.out = std::move(run->out);
  r.err = std::move(run->err);
  return r;
}

namespace {
std::string Cmdline(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : s)
    if (c == '\0') c = ' ';
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
