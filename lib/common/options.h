// Typed option tables: the one option system of the two std-only tools, codl-inject (each
// injector's --set KEY=VALUE table) and codl-victim (its --flags). A table row says name, type,
// unit, default, bounds, choices and help; the shared code parses and validates the user's text,
// so every option gets the same units ("1MiB", "2GiB/s", "500ms"), the same bounds checks and the
// same messages, e.g.
//   option 'queue_depth': 5000 is out of range [1, 4096]      (an injector's KEY)
//   --batch-size: 0 is out of range [1, 65536]                  (a flag: named as typed)
//   unknown option 'foo' for injector 'io_uring' (known: dir, mode, ...)
// It also holds the one `--flag value` / `--flag=value` scanner both tools use (FlagScanner).
//
// Two command-line styles exist on purpose: codlctl, codl-agent and codl-controller use CLI11
// (they link gRPC anyway); codl-inject and codl-victim must build on a bare GPU box with nothing
// but a C++20 compiler, so they use this std-only table instead.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/common/result.h"

namespace codl {

// kUint: a plain unsigned 64-bit decimal (seeds: no unit suffixes, "1k" as a seed would surprise).
enum class OptionType { kInt, kDouble, kBool, kString, kSize, kDuration, kRate, kEnum, kUint };

const char* OptionTypeName(OptionType type);  // "int", "size", ... (for --help)

// One row of an option table. Bounds apply to int, double, size (bytes), duration (seconds) and
// rate (base units per second); they are inclusive. Messages name a row "option 'NAME'", or
// just NAME when it is a flag ("--steps").
struct OptionSpec {
  std::string name;
  OptionType type = OptionType::kString;
  std::string unit;           // shown in --help: "bytes", "s", "%", "" ...
  std::string default_value;  // text, parsed exactly like user input (must be valid)
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // kEnum only
  std::string help;
};

// Builders that keep option tables one readable line per option.
OptionSpec IntOption(std::string name, std::string default_value, double min, double max,
                     std::string help, std::string unit = "");
OptionSpec DoubleOption(std::string name, std::string default_value, double min, double max,
                        std::string help, std::string unit = "");
OptionSpec SizeOption(std::string name, std::string default_value, double min, double max,
                      std::string help);
OptionSpec DurationOption(std::string name, std::string default_value, double min, double max,
                          std::string help);
OptionSpec RateOption(std::string name, std::string default_value, double min, double max,
                      std::string help, std::string unit);
OptionSpec BoolOption(std::string name, std::string default_value, std::string help);
OptionSpec StringOption(std::string name, std::string default_value, std::string help);
OptionSpec EnumOption(std::string name, std::string default_value, std::vector<std::string> choices,
                      std::string help);
OptionSpec UintOption(std::string name, std::string default_value, std::string help);

// Bounds rendered for messages and --help: "[1, 4096]", "[512, 64MiB]", "[0.1s, 1h]".
std::string FormatRange(const OptionSpec& spec);
// A bound/value rendered exactly in the option's unit ("64MiB", "4096", "0.5s").
std::string FormatBound(const OptionSpec& spec, double value);
// What --help shows as the allowed values: the range, "a|b|c" for enums, "true|false", or "".
std::string HelpRange(const OptionSpec& spec);
// The --help table: a header line, then one line per option (name, type, default, range, help),
// each line starting with `indent`.
std::string RenderOptionTable(const std::vector<OptionSpec>& table, const std::string& indent);

// Validated values, typed. Getters take the option name from the table; asking for a name
// that is not in the table, or with the wrong type, is a programming error and aborts.
class OptionValues {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, uint64_t>;

  int64_t Int(std::string_view name) const;
  double Double(std::string_view name) const;  // kDouble
  bool Bool(std::string_view name) const;
  const std::string& String(std::string_view name) const;  // kString and kEnum
  uint64_t Size(std::string_view name) const;              // bytes
  uint64_t Uint(std::string_view name) const;
  double Duration(std::string_view name) const;          // seconds
  double Rate(std::string_view name) const;              // base units per second
  bool WasSet(std::string_view name) const;              // given by the user (not the default)
  const std::string& Text(std::string_view name) const;  // as typed (or the default text)

  // Used by ParseOptions and by tests that build values directly.
  void Put(const std::string& name, OptionType type, Value value, std::string text, bool was_set);

 private:
  struct Entry {
    OptionType type;
    Value value;
    std::string text;
    bool was_set;
  };
  const Entry& Get(std::string_view name, OptionType a, OptionType b) const;
  std::map<std::string, Entry, std::less<>> entries_;
};

// Parses one value against its spec; the error names the option and the allowed range.
Result<OptionValues::Value> ParseOptionValue(const OptionSpec& spec, std::string_view text);

// Parses a whole KEY=VALUE set against a table; defaults fill the rest. `owner` names the table's
// owner in messages: "unknown option 'K' for OWNER (known: ...)", "OWNER has an invalid default".
Result<OptionValues> ParseOptionTable(const std::string& owner,
                                      const std::vector<OptionSpec>& table,
                                      const std::map<std::string, std::string>& given);

// Walks a command line: "--name value" and "--name=value" alike.
//   FlagScanner flags(args);
//   while (flags.Next()) { if (flags.name() == "--x") { auto v = flags.Value(); ... } }
class FlagScanner {
 public:
  explicit FlagScanner(const std::vector<std::string>& args, size_t first = 0)
      : args_(args), next_(first) {}
  // Moves to the next argument; false at the end.
  bool Next();
  // The argument, less "=value" when it was "--name=value".
  const std::string& name() const { return name_; }
  bool is_flag() const { return name_.rfind("-", 0) == 0; }
  // The flag's value: the inline one, else the following argument (consumed).
  // Error: "NAME needs a value".
  Result<std::string> Value();
  // For flags without a value. Error: "NAME takes no value" when one was inlined.
  Status NoValue() const;

 private:
  const std::vector<std::string>& args_;
  size_t next_;
  std::string name_;
  std::optional<std::string> inline_value_;
};

}  // namespace codl
