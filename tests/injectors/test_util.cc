#include "tests/injectors/test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace codl::testing {
namespace fs = std::filesystem;

namespace {
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

pid_t SpawnWithPipes(const std::vector<std::string>& argv, int* out_fd, int* err_fd) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  *out_fd = out[0];
  if (err_fd) {
    *err_fd = err[0];
  } else {
    close(err[0]);
  }
  return pid;
}
}  // namespace

TempDir::TempDir() {
  std::string base;
  if (const char* bin = std::getenv("CODL_BIN_DIR")) base = std::string(bin) + "/../test-scratch";
  else base = "/var/tmp/codl-test-scratch";
  fs::create_directories(base);
  std::string tmpl = base + "/XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = fs::canonical(tmpl).string();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string CodlInjectPath() {
  const char* bin = std::getenv("CODL_BIN_DIR");
  return std::string(bin ? bin : "bin") + "/codl-inject";
}

ProcessResult RunProcess(const std::vector<std::string>& argv, double timeout_s) {
  ProcessResult r;
  int out_fd, err_fd;
  const double start = Now();
  const pid_t pid = SpawnWithPipes(argv, &out_fd, &err_fd);
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const double left = timeout_s - (Now() - start);
    if (left <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left * 1000) + 1) <= 0) continue;
    for (auto& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(p.fd, buf, sizeof buf);
      if (n <= 0) {
        close(p.fd);
        p.fd = -1;
        --open_fds;
      } else {
        (p.fd == out_fd ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.seconds = Now() - start;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Child::Child(const std::vector<std::string>& argv) { pid_ = SpawnWithPipes(argv, &out_fd_, nullptr); }

Child::~Child() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

std::string Child::ReadLine(double timeout_s) {
  const double start = Now();
  while (true) {
    if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const double left = timeout_s - (Now() - start);
    if (left <= 0) return "";
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) return "";
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

int Child::Wait(double timeout_s) {
  const double start = Now();
  int status = 0;
  while (Now() - start < timeout_s) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    usleep(2000);
  }
  return -1000;
}

std::string Child::ReadRest() {
  std::string rest = buffer_;
  buffer_.clear();
  char buf[4096];
  ssize_t n;
  while ((n = read(out_fd_, buf, sizeof buf)) > 0) rest.append(buf, static_cast<size_t>(n));
  return rest;
}

std::vector<std::string> FindRunDirs(const std::string& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it.depth() > 1) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename().string().rfind("codl-inject.", 0) == 0) found.push_back(it->path());
  }
  return found;
}

bool JsonHas(const std::string& line, const std::string& key) {
  return line.find("\"" + key + "\":") != std::string::npos;
}

double JsonNumber(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t pos = line.find(k);
  if (pos == std::string::npos) return std::nan("");
  const std::string rest = line.substr(pos + k.size());
  if (rest.rfind("true", 0) == 0) return 1;
  if (rest.rfind("false", 0) == 0) return 0;
  char* end = nullptr;
  const double v = std::strtod(rest.c_str(), &end);
  return end == rest.c_str() ? std::nan("") : v;
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

}  // namespace codl::testing
