// Typed option tables for injectors. The core (not each injector) parses and validates the
// user's KEY=VALUE text, so every injector gets the same units ("1MiB", "2GiB/s", "500ms"), the
// same bounds checks and the same messages, e.g.
//   option 'queue_depth': 5000 is out of range [1, 4096]
//   unknown option 'foo' for injector 'io_uring' (known: dir, mode, ...)
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors {

enum class OptionType { kInt, kDouble, kBool, kString, kSize, kDuration, kRate, kEnum };

const char* OptionTypeName(OptionType type);  // "int", "size", ... (for --help)

// One row of an injector's option table. Bounds apply to int, double, size (bytes),
// duration (seconds) and rate (base units per second); they are inclusive.
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
OptionSpec EnumOption(std::string name, std::string default_value,
                      std::vector<std::string> choices, std::string help);

// Bounds rendered for messages and --help: "[1, 4096]", "[512, 64MiB]", "[0.1s, 1h]".
std::string FormatRange(const OptionSpec& spec);
// A bound/value rendered exactly in the option's unit ("64MiB", "4096", "0.5s").
std::string FormatBound(const OptionSpec& spec, double value);

// Validated values, typed. Getters take the option name from the table; asking for a name
// that is not in the table, or with the wrong type, is a programming error and aborts.
class OptionValues {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, uint64_t>;

  int64_t Int(std::string_view name) const;
  double Double(std::string_view name) const;    // kDouble
  bool Bool(std::string_view name) const;
  const std::string& String(std::string_view name) const;  // kString and kEnum
  uint64_t Size(std::string_view name) const;    // bytes
  double Duration(std::string_view name) const;  // seconds
  double Rate(std::string_view name) const;      // base units per second
  bool WasSet(std::string_view name) const;      // given by the user (not the default)
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

// Parses a whole KEY=VALUE set against a table; defaults fill the rest. `injector` names the
// injector in the unknown-option message.
Result<OptionValues> ParseOptions(const std::string& injector, const std::vector<OptionSpec>& table,
                                  const std::map<std::string, std::string>& given);

}  // namespace codl::injectors
