// Command line of codl-inject, parsed by hand (the tool must build with nothing but a C++20
// compiler). The interface is a contract with codl-agent and the acceptance scripts:
//   codl-inject --list [--json]
//   codl-inject --help | INJECTOR --help
//   codl-inject INJECTOR [--set K=V]... --calibrate [--duration D] [--json]
//   codl-inject INJECTOR [--set K=V]... (--max | --rate R | --level F [--peak R])
//               [--duration D] [--calibrate-duration D] [--json]
//   codl-inject --cleanup-stale [--json]
// plus --scratch-root DIR (repeatable) for any of them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::inject {

enum class Command { kUsage, kList, kInjectorHelp, kCalibrate, kRun, kCleanupStale };
enum class Intensity { kNone, kMax, kRate, kLevel };

struct CliArgs {
  Command command = Command::kUsage;
  bool json = false;
  std::string injector;
  std::map<std::string, std::string> options;  // --set KEY=VALUE
  Intensity intensity = Intensity::kNone;
  std::string rate_text;  // --rate, as typed (converted once the injector's unit is known)
  std::string peak_text;  // --peak
  double level = 0;
  double duration_s = 0;  // 0 = until SIGINT/SIGTERM
  double calibrate_duration_s = 2;
  int64_t start_at_unix_ns = 0;  // --start-at: begin the load at this wall-clock time (0 = now)
  std::vector<std::string> scratch_roots;
};

// Errors are usage errors (exit code 2); the message names the flag and what it accepts.
Result<CliArgs> ParseArgs(const std::vector<std::string>& argv);

}  // namespace codl::inject
