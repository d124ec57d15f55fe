#include "injectors/codl-inject/args.h"

#include <cstdlib>

#include "lib/common/units.h"

namespace codl::inject {
namespace {

// "--flag=value" or "--flag value". Returns false (and sets *error) when the value is missing.
bool TakeValue(const std::vector<std::string>& argv, size_t* i, const std::string& flag,
               const std::string& inline_value, bool has_inline, std::string* value,
               std::string* error) {
  if (has_inline) {
    *value = inline_value;
    return true;
  }
  if (*i + 1 >= argv.size()) {
    *error = flag + " needs a value";
    return false;
  }
  *value = argv[++*i];
  return true;
}

}  // namespace

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
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string arg = argv[i];
    std::string inline_value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    std::string value;
    auto take = [&] { return TakeValue(argv, &i, arg, inline_value, has_inline, &value, &error); };
    auto no_value = [&] {
      if (has_inline) error = arg + " takes no value";
      return !has_inline;
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
