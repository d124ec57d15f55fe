#include "lib/common/options.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "lib/common/suggest.h"
#include "lib/common/units.h"

namespace codl {
namespace {

// A flag is named as the user typed it; a KEY of a KEY=VALUE set as "option 'KEY'".
std::string Named(const OptionSpec& spec) {
  if (spec.name.rfind("-", 0) == 0) return spec.name;
  return "option '" + spec.name + "'";
}
std::string Prefix(const OptionSpec& spec) { return Named(spec) + ": "; }

std::string Num(double v) {
  char buf[48];
  if (std::fabs(v) < 9.007e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%g", v);
  }
  return buf;
}

// Bounds check shared by all numeric types; `shown` is the value as the user typed it.
Status CheckRange(const OptionSpec& spec, double v, const std::string& shown) {
  if (v < spec.min || v > spec.max) {
    return Err(Prefix(spec) + shown + " is out of range " + FormatRange(spec));
  }
  return Status::Ok();
}

}  // namespace

namespace {
OptionSpec Make(std::string name, OptionType type, std::string unit, std::string def, double min,
                double max, std::string help) {
  OptionSpec s;
  s.name = std::move(name);
  s.type = type;
  s.unit = std::move(unit);
  s.default_value = std::move(def);
  s.min = min;
  s.max = max;
  s.help = std::move(help);
  return s;
}
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

OptionSpec IntOption(std::string name, std::string def, double min, double max, std::string help,
                     std::string unit) {
  return Make(std::move(name), OptionType::kInt, std::move(unit), std::move(def), min, max,
              std::move(help));
}
OptionSpec DoubleOption(std::string name, std::string def, double min, double max, std::string help,
                        std::string unit) {
  return Make(std::move(name), OptionType::kDouble, std::move(unit), std::move(def), min, max,
              std::move(help));
}
OptionSpec SizeOption(std::string name, std::string def, double min, double max, std::string help) {
  return Make(std::move(name), OptionType::kSize, "bytes", std::move(def), min, max,
              std::move(help));
}
OptionSpec DurationOption(std::string name, std::string def, double min, double max,
                          std::string help) {
  return Make(std::move(name), OptionType::kDuration, "s", std::move(def), min, max,
              std::move(help));
}
OptionSpec RateOption(std::string name, std::string def, double min, double max, std::string help,
                      std::string unit) {
  return Make(std::move(name), OptionType::kRate, std::move(unit), std::move(def), min, max,
              std::move(help));
}
OptionSpec BoolOption(std::string name, std::string def, std::string help) {
  return Make(std::move(name), OptionType::kBool, "", std::move(def), -kInf, kInf, std::move(help));
}
OptionSpec StringOption(std::string name, std::string def, std::string help) {
  return Make(std::move(name), OptionType::kString, "", std::move(def), -kInf, kInf,
              std::move(help));
}
OptionSpec EnumOption(std::string name, std::string def, std::vector<std::string> choices,
                      std::string help) {
  OptionSpec s =
      Make(std::move(name), OptionType::kEnum, "", std::move(def), -kInf, kInf, std::move(help));
  s.choices = std::move(choices);
  return s;
}

OptionSpec UintOption(std::string name, std::string def, std::string help) {
  return Make(std::move(name), OptionType::kUint, "", std::move(def), 0, kInf, std::move(help));
}

const char* OptionTypeName(OptionType type) {
  switch (type) {
    case OptionType::kInt: return "int";
    case OptionType::kDouble: return "double";
    case OptionType::kBool: return "bool";
    case OptionType::kString: return "string";
    case OptionType::kSize: return "size";
    case OptionType::kDuration: return "duration";
    case OptionType::kRate: return "rate";
    case OptionType::kEnum: return "enum";
    case OptionType::kUint: return "uint";
  }
  return "?";
}

std::string FormatBound(const OptionSpec& spec, double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  switch (spec.type) {
    case OptionType::kSize: {
      // Exact binary units so a bound reads like something the user can type back.
      static const struct {
        double mult;
        const char* suffix;
      } kUnits[] = {{1024.0 * 1024 * 1024 * 1024, "TiB"},
                    {1024.0 * 1024 * 1024, "GiB"},
                    {1024.0 * 1024, "MiB"},
                    {1024.0, "KiB"}};
      for (const auto& u : kUnits) {
        if (v >= u.mult && std::fmod(v, u.mult) == 0) return Num(v / u.mult) + u.suffix;
      }
      return Num(v);
    }
    case OptionType::kDuration:
      if (v == 0 || v >= 1) return Num(v) + "s";
      if (v >= 1e-3) return Num(v * 1e3) + "ms";
      return Num(v * 1e6) + "us";
    default: return Num(v);
  }
}

std::string FormatRange(const OptionSpec& spec) {
  return "[" + FormatBound(spec, spec.min) + ", " + FormatBound(spec, spec.max) + "]";
}

std::string HelpRange(const OptionSpec& spec) {
  switch (spec.type) {
    case OptionType::kEnum: {
      std::string s;
      for (const auto& c : spec.choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    case OptionType::kBool: return "true|false";
    case OptionType::kString: return "";
    case OptionType::kUint: return "[0, 18446744073709551615]";
    default: return FormatRange(spec);
  }
}

std::string RenderOptionTable(const std::vector<OptionSpec>& table, const std::string& indent) {
  auto row = [&](const std::string& name, const std::string& type, const std::string& def,
                 const std::string& range, const std::string& help) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%-20s %-9s %-14s %-22s ", name.c_str(), type.c_str(),
                  def.c_str(), range.c_str());
    return indent + buf + help + "\n";
  };
  std::string out = row("name", "type", "default", "range", "help");
  for (const auto& o : table) {
    out += row(o.name, OptionTypeName(o.type), o.default_value.empty() ? "\"\"" : o.default_value,
               HelpRange(o), o.help);
  }
  return out;
}

namespace {
Result<uint64_t> ParseUint(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Err("'" + std::string(text) +
               "' is not an unsigned integer in [0, 18446744073709551615]");
  }
  return v;
}
}  // namespace

Result<OptionValues::Value> ParseOptionValue(const OptionSpec& spec, std::string_view raw) {
  const std::string text(TrimSpace(raw));
  switch (spec.type) {
    case OptionType::kInt: {
      auto n = ParseNumber(text);
      if (!n.ok() || *n != std::floor(*n) || std::fabs(*n) > 9.2e18) {
        return Err(Prefix(spec) + "'" + text + "' is not an integer");
      }
      if (auto s = CheckRange(spec, *n, text); !s) return s;
      return OptionValues::Value(static_cast<int64_t>(*n));
    }
    case OptionType::kDouble: {
      auto n = ParseNumber(text);
      if (!n.ok()) return Err(Prefix(spec) + "'" + text + "' is not a number");
      if (auto s = CheckRange(spec, *n, text); !s) return s;
      return OptionValues::Value(*n);
    }
    case OptionType::kBool: {
      if (text == "true" || text == "1" || text == "yes" || text == "on")
        return OptionValues::Value(true);
      if (text == "false" || text == "0" || text == "no" || text == "off")
        return OptionValues::Value(false);
      return Err(Prefix(spec) + "'" + text + "' is not a boolean (use true or false)");
    }
    case OptionType::kString: return OptionValues::Value(std::string(raw));
    case OptionType::kSize: {
      auto n = ParseSize(text);
      if (!n.ok()) return n.status().WithContext(Named(spec));
      if (auto s = CheckRange(spec, static_cast<double>(*n), text); !s) return s;
      return OptionValues::Value(static_cast<uint64_t>(*n));
    }
    case OptionType::kDuration: {
      auto d = ParseDuration(text);
      if (!d.ok()) return d.status().WithContext(Named(spec));
      if (auto s = CheckRange(spec, *d, text); !s) return s;
      return OptionValues::Value(*d);
    }
    case OptionType::kRate: {
      auto r = ParseRate(text);
      if (!r.ok()) return r.status().WithContext(Named(spec));
      if (auto s = CheckRange(spec, r->value, text); !s) return s;
      return OptionValues::Value(r->value);
    }
    case OptionType::kEnum: {
      for (const auto& c : spec.choices) {
        if (c == text) return OptionValues::Value(text);
      }
      std::string list;
      for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
      return Err(Prefix(spec) + "'" + text + "' is not one of: " + list);
    }
    case OptionType::kUint: {
      auto n = ParseUint(text);
      if (!n.ok()) return n.status().WithContext(Named(spec));
      return OptionValues::Value(*n);
    }
  }
  return Err(Prefix(spec) + "unknown option type");
}

Result<OptionValues> ParseOptionTable(const std::string& owner,
                                      const std::vector<OptionSpec>& table,
                                      const std::map<std::string, std::string>& given) {
  for (const auto& [key, value] : given) {
    bool known = false;
    for (const auto& spec : table) known = known || spec.name == key;
    if (!known) {
      std::string list;
      std::vector<std::string> names;
      for (const auto& spec : table) {
        list += (list.empty() ? "" : ", ") + spec.name;
        names.push_back(spec.name);
      }
      return Err("unknown option '" + key + "' for " + owner + DidYouMean(key, names) +
                 " (known: " + (list.empty() ? "none" : list) + ")");
    }
  }
  OptionValues values;
  for (const auto& spec : table) {
    auto it = given.find(spec.name);
    const bool was_set = it != given.end();
    const std::string text = was_set ? it->second : spec.default_value;
    auto parsed = ParseOptionValue(spec, text);
    if (!parsed.ok()) {
      // A bad default is a bug in the table, not the user's fault: say so.
      if (was_set) return parsed.status();
      return parsed.status().WithContext(owner + " has an invalid default");
    }
    values.Put(spec.name, spec.type, std::move(parsed).value(), text, was_set);
  }
  return values;
}

void OptionValues::Put(const std::string& name, OptionType type, Value value, std::string text,
                       bool was_set) {
  entries_[name] = Entry{type, std::move(value), std::move(text), was_set};
}

const OptionValues::Entry& OptionValues::Get(std::string_view name, OptionType a,
                                             OptionType b) const {
  auto it = entries_.find(name);
  if (it == entries_.end() || (it->second.type != a && it->second.type != b)) {
    std::fprintf(stderr, "codl: bug: option '%.*s' read as %s but the table says %s\n",
                 static_cast<int>(name.size()), name.data(), OptionTypeName(a),
                 it == entries_.end() ? "nothing" : OptionTypeName(it->second.type));
    std::abort();
  }
  return it->second;
}

int64_t OptionValues::Int(std::string_view n) const {
  return std::get<int64_t>(Get(n, OptionType::kInt, OptionType::kInt).value);
}
double OptionValues::Double(std::string_view n) const {
  return std::get<double>(Get(n, OptionType::kDouble, OptionType::kDouble).value);
}
bool OptionValues::Bool(std::string_view n) const {
  return std::get<bool>(Get(n, OptionType::kBool, OptionType::kBool).value);
}
const std::string& OptionValues::String(std::string_view n) const {
  return std::get<std::string>(Get(n, OptionType::kString, OptionType::kEnum).value);
}
uint64_t OptionValues::Uint(std::string_view n) const {
  return std::get<uint64_t>(Get(n, OptionType::kUint, OptionType::kUint).value);
}
uint64_t OptionValues::Size(std::string_view n) const {
  return std::get<uint64_t>(Get(n, OptionType::kSize, OptionType::kSize).value);
}
double OptionValues::Duration(std::string_view n) const {
  return std::get<double>(Get(n, OptionType::kDuration, OptionType::kDuration).value);
}
double OptionValues::Rate(std::string_view n) const {
  return std::get<double>(Get(n, OptionType::kRate, OptionType::kRate).value);
}
bool OptionValues::WasSet(std::string_view n) const {
  auto it = entries_.find(n);
  return it != entries_.end() && it->second.was_set;
}
const std::string& OptionValues::Text(std::string_view n) const {
  auto it = entries_.find(n);
  if (it == entries_.end()) {
    static const std::string kEmpty;
    return kEmpty;
  }
  return it->second.text;
}

}  // namespace codl

namespace codl {

bool FlagScanner::Next() {
  if (next_ >= args_.size()) return false;
  name_ = args_[next_++];
  inline_value_.reset();
  if (size_t eq = name_.find('='); name_.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = name_.substr(eq + 1);
    name_.resize(eq);
  }
  return true;
}

Result<std::string> FlagScanner::Value() {
  if (inline_value_) return *inline_value_;
  if (next_ >= args_.size()) return Err(name_ + " needs a value");
  return args_[next_++];
}

Status FlagScanner::NoValue() const {
  if (inline_value_) return Err(name_ + " takes no value");
  return Status::Ok();
}

}  // namespace codl
