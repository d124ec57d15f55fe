#include "injectors/codl-inject/args.h"

#include <cstdlib>

#include "lib/common/options.h"
#include "lib/common/units.h"

namespace codl::inject {

Result<CliArgs> ParseArgs(const std::vector<std::string>& argv) {
  CliArgs args;
  bool help = false, list = false, calibrate = false, cleanup = false;
  std::string error;
  auto set_intensity = [&](Intensity v, const std::string& flag) {
    if (args.intensity != Intensity::kNone) {
      error = flag + ": choose one of --max, --rate, --level";
      return false;
    }
    args.intensity = v;
    return true;
  };
  FlagScanner flags(argv, 1);  // argv[0] is the program
  while (flags.Next()) {
    const std::string& arg = flags.name();
    std::string value;
    auto take = [&] {
      auto v = flags.Value();
      if (!v.ok()) error = v.error();
      if (v.ok()) value = *v;
      return v.ok();
    };
    auto no_value = [&] {
      Status s = flags.NoValue();
      if (!s.ok()) error = s.error();
      return s.ok();
    };

    if (arg == "--help" || arg == "-h") {
      if (!no_value()) return Err(error);
      help = true;
    } else if (arg == "--list") {
      if (!no_value()) return Err(error);
      list = true;
    } else if (arg == "--json") {
      if (!no_value()) return Err(error);
      args.json = true;
    } else if (arg == "--calibrate") {
      if (!no_value()) return Err(error);
      calibrate = true;
    } else if (arg == "--cleanup-stale") {
      if (!no_value()) return Err(error);
      cleanup = true;
    } else if (arg == "--max") {
      if (!no_value() || !set_intensity(Intensity::kMax, arg)) return Err(error);
    } else if (arg == "--rate") {
      if (!take() || !set_intensity(Intensity::kRate, arg)) return Err(error);
      args.rate_text = value;
    } else if (arg == "--level") {
      if (!take() || !set_intensity(Intensity::kLevel, arg)) return Err(error);
      auto n = ParseNumber(value);
      if (!n.ok()) return Err("--level: '" + value + "' is not a number");
      if (*n < 0 || *n > 1) return Err("--level: " + value + " is out of range [0, 1]");
      args.level = *n;
    } else if (arg == "--peak") {
      if (!take()) return Err(error);
      args.peak_text = value;
    } else if (arg == "--duration" || arg == "--calibrate-duration") {
      if (!take()) return Err(error);
      auto d = ParseDuration(value);
      if (!d.ok()) return Err(arg + ": " + d.error());
      if (*d <= 0) return Err(arg + ": " + value + " must be greater than 0");
      (arg == "--duration" ? args.duration_s : args.calibrate_duration_s) = *d;
    } else if (arg == "--start-at") {
      if (!take()) return Err(error);
      char* end = nullptr;
      const long long ns = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || ns <= 0) {
        return Err("--start-at: '" + value + "' is not a positive Unix time in nanoseconds");
      }
      args.start_at_unix_ns = ns;
    } else if (arg == "--set") {
      if (!take()) return Err(error);
      const size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Err("--set: '" + value + "' is not KEY=VALUE");
      }
      const std::string key = value.substr(0, eq);
      if (args.options.count(key)) return Err("--set: option '" + key + "' is given twice");
      args.options[key] = value.substr(eq + 1);
    } else if (arg == "--scratch-root") {
      if (!take()) return Err(error);
      if (value.empty()) return Err("--scratch-root: empty path");
      args.scratch_roots.push_back(value);
    } else if (arg.rfind("-", 0) == 0) {
      return Err("unknown flag '" + arg + "' (see codl-inject --help)");
    } else if (args.injector.empty()) {
      args.injector = arg;
    } else {
      return Err("unexpected argument '" + arg + "' (one injector per run)");
    }
  }

  if (list) {
    args.command = Command::kList;
  } else if (cleanup) {
    if (!args.injector.empty()) return Err("--cleanup-stale takes no injector");
    args.command = Command::kCleanupStale;
  } else if (help || args.injector.empty()) {
    args.command = args.injector.empty() ? Command::kUsage : Command::kInjectorHelp;
    if (args.injector.empty() && !help) return Err("no injector given (see codl-inject --list)");
  } else if (calibrate) {
    if (args.intensity != Intensity::kNone) {
      return Err("--calibrate measures the peak; it takes no --max/--rate/--level");
    }
    args.command = Command::kCalibrate;
  } else {
    if (args.intensity == Intensity::kNone) {
      return Err("say how hard to push: --max, --rate R, --level F, or --calibrate");
    }
    if (!args.peak_text.empty() && args.intensity != Intensity::kLevel) {
      return Err("--peak only goes with --level");
    }
    args.command = Command::kRun;
  }
  return args;
}

}  // namespace codl::inject
