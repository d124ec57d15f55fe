// Helpers for injector tests: a scratch directory on a real filesystem (O_DIRECT needs one;
// /tmp may be tmpfs) and running the codl-inject binary.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "injectors/core/injector.h"
#include "lib/common/subprocess.h"

namespace codl::testing {

// A fresh directory under the build tree (a real filesystem), removed recursively at the end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A Reporter that drops every sample (for Run() calls whose samples a test does not look at).
class NullReporter final : public injectors::Reporter {
 public:
  void Report(const injectors::Sample&) override {}
};

std::string CodlInjectPath();  // $CODL_BIN_DIR/codl-inject
// {codl-inject, args...}
std::vector<std::string> CodlInjectCmd(std::vector<std::string> args);

struct ProcessResult {
  int exit_code = -1;  // -1 if killed by a signal
  std::string out, err;
  double seconds = 0;
};

// Runs a command to completion (killed after timeout_s) and captures stdout/stderr.
ProcessResult RunProcess(const std::vector<std::string>& argv, double timeout_s = 30);

// A running child with stdout piped (stderr inherited), for signal tests.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv);
  ~Child();  // SIGKILLs and reaps if still running
  pid_t pid() const { return proc_.pid(); }
  // Reads stdout until a full line arrives or timeout; "" on EOF/timeout.
  std::string ReadLine(double timeout_s);
  // Waits for exit; returns exit code, or -signal if killed by one; -1000 on timeout.
  int Wait(double timeout_s);
  std::string ReadRest();  // remaining stdout after exit

 private:
  Subprocess proc_;
  std::string buffer_;
};

// Directories named codl-inject.* directly under `dir` or one level below.
std::vector<std::string> FindRunDirs(const std::string& root);

// Tiny JSON-lines helpers: value of a numeric/bool field in one flat object line.
bool JsonHas(const std::string& line, const std::string& key);
double JsonNumber(const std::string& line, const std::string& key);
std::vector<std::string> Lines(const std::string& text);

}  // namespace codl::testing
