#include "injectors/codl-inject/args.h"

#include <cerrno>
#include <cstdlib>

#include "lib/common/options.h"
#include "lib/common/units.h"

namespace codl::inject {

namespace {

// One pass over argv: flags fill `args_`, then Command() decides what to do. Each flag's
// handler returns ok or the usage error (InvalidArgument) that ends the parse.
class ArgsParser {
 public:
  explicit ArgsParser(const std::vector<std::string>& argv)
      : flags_(argv, 1) {}  // argv[0]: program

  Result<CliArgs> Parse() {
    while (flags_.Next()) {
      Status s = flags_.is_flag() ? Flag(flags_.name()) : Positional(flags_.name());
      if (!s.ok()) return s;
    }
    if (Status s = ChooseCommand(); !s.ok()) return s;
    return args_;
  }

 private:
  // A flag without a value: sets `*on`.
  Status Switch(bool* on) {
    Status s = flags_.NoValue();
    if (!s.ok()) return InvalidArgument(s.message());
    *on = true;
    return Status::Ok();
  }

  // A flag's value into `*value`.
  Status Take(std::string* value) {
    auto v = flags_.Value();
    if (!v.ok()) return InvalidArgument(v.error());
    *value = *v;
    return Status::Ok();
  }

  Status SetIntensity(Intensity v, const std::string& flag) {
    if (args_.intensity != Intensity::kNone)
      return InvalidArgument(flag + ": choose one of --max, --rate, --level");
    args_.intensity = v;
    return Status::Ok();
  }

  Status Flag(const std::string& arg) {
    if (arg == "--help" || arg == "-h") return Switch(&help_);
    if (arg == "--list") return Switch(&list_);
    if (arg == "--json") return Switch(&args_.json);
    if (arg == "--calibrate") return Switch(&calibrate_);
    if (arg == "--cleanup-stale") return Switch(&cleanup_);
    if (arg == "--max") {
      bool unused = false;
      Status s = Switch(&unused);
      return s.ok() ? SetIntensity(Intensity::kMax, arg) : s;
    }
    std::string value;
    auto valued = [&](Status (ArgsParser::*apply)(const std::string&, const std::string&)) {
      Status s = Take(&value);
      return s.ok() ? (this->*apply)(arg, value) : s;
    };
    if (arg == "--rate") return valued(&ArgsParser::Rate);
    if (arg == "--level") return valued(&ArgsParser::Level);
    if (arg == "--peak") return valued(&ArgsParser::Peak);
    if (arg == "--duration" || arg == "--calibrate-duration") return valued(&ArgsParser::Duration);
    if (arg == "--start-at") return valued(&ArgsParser::StartAt);
    if (arg == "--set") return valued(&ArgsParser::Set);
    if (arg == "--scratch-root") return valued(&ArgsParser::ScratchRoot);
    return InvalidArgument("unknown flag '" + arg + "' (see codl-inject --help)");
  }

  Status Rate(const std::string& arg, const std::string& value) {
    args_.rate_text = value;
    return SetIntensity(Intensity::kRate, arg);
  }

  Status Level(const std::string& arg, const std::string& value) {
    if (Status s = SetIntensity(Intensity::kLevel, arg); !s.ok()) return s;
    auto n = ParseNumber(value);
    if (!n.ok()) return InvalidArgument("--level: '" + value + "' is not a number");
    if (*n < 0 || *n > 1) return InvalidArgument("--level: " + value + " is out of range [0, 1]");
    args_.level = *n;
    return Status::Ok();
  }

  Status Peak(const std::string&, const std::string& value) {
    args_.peak_text = value;
    return Status::Ok();
  }

  Status Duration(const std::string& arg, const std::string& value) {
    auto d = ParseDuration(value);
    if (!d.ok()) return InvalidArgument(arg + ": " + d.error());
    if (*d <= 0) return InvalidArgument(arg + ": " + value + " must be greater than 0");
    (arg == "--duration" ? args_.duration_s : args_.calibrate_duration_s) = *d;
    return Status::Ok();
  }

  Status StartAt(const std::string&, const std::string& value) {
    char* end = nullptr;
    errno = 0;
    const long long ns = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || ns <= 0 || errno == ERANGE) {
      return InvalidArgument("--start-at: '" + value +
                             "' is not a positive Unix time in nanoseconds");
    }
    args_.start_at_unix_ns = ns;
    return Status::Ok();
  }

  Status Set(const std::string&, const std::string& value) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("--set: '" + value + "' is not KEY=VALUE");
    const std::string key = value.substr(0, eq);
    if (args_.options.count(key))
      return InvalidArgument("--set: option '" + key + "' is given twice");
    args_.options[key] = value.substr(eq + 1);
    return Status::Ok();
  }

  Status ScratchRoot(const std::string&, const std::string& value) {
    if (value.empty()) return InvalidArgument("--scratch-root: empty path");
    args_.scratch_roots.push_back(value);
    return Status::Ok();
  }

  Status Positional(const std::string& arg) {
    if (!args_.injector.empty())
      return InvalidArgument("unexpected argument '" + arg + "' (one injector per run)");
    args_.injector = arg;
    return Status::Ok();
  }

  // Which command the flags add up to, or why they do not add up.
  Status ChooseCommand() {
    if (list_) {
      args_.command = Command::kList;
    } else if (cleanup_) {
      if (!args_.injector.empty()) return InvalidArgument("--cleanup-stale takes no injector");
      args_.command = Command::kCleanupStale;
    } else if (help_ || args_.injector.empty()) {
      args_.command = args_.injector.empty() ? Command::kUsage : Command::kInjectorHelp;
      if (args_.injector.empty() && !help_)
        return InvalidArgument("no injector given (see codl-inject --list)");
    } else if (calibrate_) {
      if (args_.intensity != Intensity::kNone) {
        return InvalidArgument("--calibrate measures the peak; it takes no --max/--rate/--level");
      }
      args_.command = Command::kCalibrate;
    } else {
      if (args_.intensity == Intensity::kNone) {
        return InvalidArgument("say how hard to push: --max, --rate R, --level F, or --calibrate");
      }
      if (!args_.peak_text.empty() && args_.intensity != Intensity::kLevel) {
        return InvalidArgument("--peak only goes with --level");
      }
      args_.command = Command::kRun;
    }
    return Status::Ok();
  }

  FlagScanner flags_;
  CliArgs args_;
  bool help_ = false, list_ = false, calibrate_ = false, cleanup_ = false;
};

}  // namespace

Result<CliArgs> ParseArgs(const std::vector<std::string>& argv) { return ArgsParser(argv).Parse(); }

}  // namespace codl::inject
