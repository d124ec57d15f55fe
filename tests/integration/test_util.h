// Helpers for tests that run the real binaries: spawn/kill processes, run a command and capture
// its output, temp dirs, free loopback ports, and finding codl-inject children in /proc.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "lib/common/subprocess.h"

namespace codl::testing {

std::string BinDir();     // $CODL_BIN_DIR (set by ctest), else beside the test binary
std::string SourceDir();  // $CODL_SOURCE_DIR
std::string Bin(const std::string& name);  // BinDir()/name

std::string MakeTempDir(const std::string& prefix);  // under /tmp; caller removes
void RemoveTree(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
// WriteFile, then mode 0600: the daemons refuse group/other-accessible secrets.
void WriteSecretFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);
// The non-empty lines of `text`.
std::vector<std::string> Lines(const std::string& text);

int FreeLoopbackPort();

// A background process with stdout+stderr redirected to `log_path`.
class Process {
 public:
  Process() = default;
  Process(const std::vector<std::string>& argv, const std::string& log_path,
          const std::string& cwd = "", const std::map<std::string, std::string>& env = {});
  ~Process();  // SIGKILLs and reaps it if still running
  Process(Process&& o) noexcept = default;
  Process& operator=(Process&& o) noexcept = default;
  pid_t pid() const { return proc_.pid(); }
  void Signal(int sig);
  // Waits up to timeout_s; returns the exit code (-signal), or -1000 on timeout.
  int Wait(double timeout_s);
  bool Running();

 private:
  Subprocess proc_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs argv to completion (timeout_s, then SIGKILL) and captures stdout/stderr.
CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s = 120,
                         const std::string& cwd = "");

// Descendant pids of `root` (children, grandchildren...) whose command line contains `needle`.
std::vector<pid_t> DescendantsMatching(pid_t root, const std::string& needle);
// All processes whose command line contains `needle` (any parent).
std::vector<pid_t> ProcessesMatching(const std::string& needle);

// Polls `pred` every 50 ms up to timeout_s.
template <class F>
bool WaitUntil(F pred, double timeout_s);

}  // namespace codl::testing

#include <chrono>
#include <thread>

template <class F>
bool codl::testing::WaitUntil(F pred, double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}
