#include "tests/injectors/test_util.h"

#include <poll.h>
#include <signal.h>
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

std::vector<std::string> CodlInjectCmd(std::vector<std::string> args) {
  args.insert(args.begin(), CodlInjectPath());
  return args;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, double timeout_s) {
  SpawnOptions o;
  o.argv = argv;
  auto run = RunAndCapture(o, timeout_s);
  if (!run.ok()) throw std::runtime_error(run.error());
  ProcessResult r;
  r.out = std::move(run->out);
  r.err = std::move(run->err);
  r.seconds = run->seconds;
  r.exit_code = run->status.exited ? run->status.code : -1;
  return r;
}

Child::Child(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  o.out = Stdio::Pipe();
  auto p = Subprocess::Spawn(o);
  if (!p.ok()) throw std::runtime_error(p.error());
  proc_ = std::move(*p);
}

Child::~Child() {
  if (!proc_.reaped()) {
    proc_.Signal(SIGKILL);
    proc_.Wait();
  }
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
    pollfd p{proc_.stdout_fd(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(proc_.stdout_fd(), buf, sizeof buf);
    if (n <= 0) return "";
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

int Child::Wait(double timeout_s) {
  auto status = proc_.WaitFor(timeout_s);
  return status ? status->CodeOrNegativeSignal() : -1000;
}

std::string Child::ReadRest() {
  std::string rest = buffer_;
  buffer_.clear();
  char buf[4096];
  ssize_t n;
  while ((n = read(proc_.stdout_fd(), buf, sizeof buf)) > 0)
    rest.append(buf, static_cast<size_t>(n));
  return rest;
}

std::vector<std::string> FindRunDirs(const std::string& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
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
