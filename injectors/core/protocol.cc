#include "injectors/core/protocol.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

#include "injectors/core/json_reader.h"
#include "lib/common/json_line.h"

namespace codl::injectors::protocol {
namespace {

using json::Value;

// A parsed record: its fields by name, with typed getters that say what is wrong.
class Fields {
 public:
  explicit Fields(Value object) : v_(std::move(object)) {}

  bool Has(std::string_view key) const { return v_.Find(key) != nullptr; }
  const std::vector<std::string>& keys() const { return v_.keys; }
  const Value& at(size_t i) const { return v_.items[i]; }

  // Absent: *out unchanged.
  Status Number(std::string_view key, double* out) const {
    const Value* f = v_.Find(key);
    if (f == nullptr) return Status::Ok();
    if (f->kind == Value::Kind::kNull) {
      *out = std::numeric_limits<double>::quiet_NaN();
      return Status::Ok();
    }
    if (f->kind != Value::Kind::kNumber) return Wrong(key, "a number");
    *out = ToDouble(f->text);
    return Status::Ok();
  }
  Status Int(std::string_view key, int64_t* out) const {
    const Value* f = v_.Find(key);
    if (f == nullptr) return Status::Ok();
    if (f->kind != Value::Kind::kNumber) return Wrong(key, "an integer");
    auto v = ToInt64(f->text);
    if (!v.ok()) return InvalidArgument("'" + std::string(key) + "': " + v.error());
    *out = *v;
    return Status::Ok();
  }
  Status String(std::string_view key, std::string* out) const {
    const Value* f = v_.Find(key);
    if (f == nullptr) return Status::Ok();
    if (f->kind != Value::Kind::kString) return Wrong(key, "a string");
    *out = f->text;
    return Status::Ok();
  }
  Status Bool(std::string_view key, bool* out) const {
    const Value* f = v_.Find(key);
    if (f == nullptr) return Status::Ok();
    if (f->kind != Value::Kind::kBool) return Wrong(key, "true or false");
    *out = f->boolean;
    return Status::Ok();
  }
  // An object of strings; values of other types are skipped.
  Status StringMap(std::string_view key, std::map<std::string, std::string>* out) const {
    const Value* f = v_.Find(key);
    if (f == nullptr) return Status::Ok();
    if (f->kind != Value::Kind::kObject) return Wrong(key, "an object");
    for (size_t i = 0; i < f->keys.size(); ++i) {
      if (f->items[i].kind == Value::Kind::kString) out->emplace(f->keys[i], f->items[i].text);
    }
    return Status::Ok();
  }
  Status Strings(std::string_view key, std::vector<std::string>* out) const {
    const Value* f = v_.Find(key);
    if (f == nullptr) return Status::Ok();
    if (f->kind != Value::Kind::kArray) return Wrong(key, "an array");
    for (const Value& item : f->items) {
      if (item.kind != Value::Kind::kString) return Wrong(key, "an array of strings");
      out->push_back(item.text);
    }
    return Status::Ok();
  }
  // The nested object under `key` (required).
  Result<Fields> Object(std::string_view key) const {
    const Value* f = v_.Find(key);
    if (f == nullptr || f->kind != Value::Kind::kObject) return Wrong(key, "an object");
    return Fields(*f);
  }
  Status Require(std::string_view key) const {
    if (Has(key)) return Status::Ok();
    return InvalidArgument("missing '" + std::string(key) + "'");
  }
  // Every numeric field not named in `known` (null: a non-finite one), as the record's extras.
  void Extra(const std::set<std::string_view>& known, std::map<std::string, double>* out) const {
    for (size_t i = 0; i < v_.keys.size(); ++i) {
      const Value& v = v_.items[i];
      if (known.count(v_.keys[i])) continue;
      if (v.kind == Value::Kind::kNumber) {
        out->emplace(v_.keys[i], ToDouble(v.text));
      } else if (v.kind == Value::Kind::kNull) {
        out->emplace(v_.keys[i], std::numeric_limits<double>::quiet_NaN());
      }
    }
  }

 private:
  static Status Wrong(std::string_view key, const char* expected) {
    return InvalidArgument("'" + std::string(key) + "' must be " + expected);
  }
  static double ToDouble(const std::string& text) { return std::strtod(text.c_str(), nullptr); }
  static Result<int64_t> ToInt64(const std::string& text) {
    if (text.find_first_of(".eE") == std::string::npos) {
      errno = 0;
      const long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) return InvalidArgument(text + " is out of range");
      return static_cast<int64_t>(v);
    }
    const double d = std::strtod(text.c_str(), nullptr);
    if (!(std::fabs(d) < 9.2e18) || d != std::floor(d)) {
      return InvalidArgument(text + " is not an integer");
    }
    return static_cast<int64_t>(d);
  }
  Value v_;
};

// Status-returning steps, first failure wins.
#define CODL_PROTOCOL_TRY(expr)                  \
  do {                                           \
    if (Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

Result<Value> ParseJsonObject(std::string_view line) {
  auto v = json::Parse(line);
  if (!v.ok()) return v;
  if (v->kind != Value::Kind::kObject || v->keys.empty()) {
    return InvalidArgument("not a JSON object with fields");
  }
  return v;
}

// The record's fields when `line` is a record of the kind whose first key is `first_key`.
Result<Fields> Open(std::string_view line, const char* first_key) {
  auto v = ParseJsonObject(line);
  if (!v.ok()) return v.status();
  if (v->keys.front() != first_key) {
    return InvalidArgument("not a '" + std::string(first_key) + "' record (first key '" +
                           v->keys.front() + "')");
  }
  return Fields(std::move(*v));
}

std::string Quoted(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? "," : "") + JsonEscape(s);
  return out + "]";
}

}  // namespace

// ---- hex ------------------------------------------------------------------------------------

std::string HexEncode(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
  }
  return out;
}

Result<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return InvalidArgument("odd number of hex characters (" + std::to_string(hex.size()) + ")");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < hex.size(); ++i) {
    const int v = nibble(hex[i]);
    if (v < 0) {
      const unsigned char c = static_cast<unsigned char>(hex[i]);
      char shown[8];
      if (c >= 0x20 && c < 0x7f) {
        std::snprintf(shown, sizeof shown, "%c", c);
      } else {
        std::snprintf(shown, sizeof shown, "\\x%02x", c);
      }
      return InvalidArgument(std::string("invalid hex character '") + shown + "' at offset " +
                             std::to_string(i));
    }
    unsigned char& b = reinterpret_cast<unsigned char&>(out[i / 2]);
    b = static_cast<unsigned char>(i % 2 == 0 ? v << 4 : b | v);
  }
  return out;
}

Result<std::string> HexDecode(std::string_view hex, size_t expected_bytes) {
  if (hex.size() != 2 * expected_bytes) {
    return InvalidArgument("expected " + std::to_string(2 * expected_bytes) + " hex characters (" +
                           std::to_string(expected_bytes) + " bytes), got " +
                           std::to_string(hex.size()));
  }
  return HexDecode(hex);
}

// ---- records --------------------------------------------------------------------------------

std::string Interval::Format() const {
  JsonLine line;
  line.Add(kFirstKey, t_s).Add("achieved", achieved).Add("target", target).Add("unit", unit);
  line.Add("phase", phase).Add("saturated", saturated);
  for (const auto& [k, v] : extra) line.Add(k, v);
  return line.str();
}

Result<Interval> Interval::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  Interval r;
  CODL_PROTOCOL_TRY(f->Require("achieved"));
  CODL_PROTOCOL_TRY(f->Number(kFirstKey, &r.t_s));
  CODL_PROTOCOL_TRY(f->Number("achieved", &r.achieved));
  CODL_PROTOCOL_TRY(f->Number("target", &r.target));
  CODL_PROTOCOL_TRY(f->String("unit", &r.unit));
  CODL_PROTOCOL_TRY(f->String("phase", &r.phase));
  CODL_PROTOCOL_TRY(f->Bool("saturated", &r.saturated));
  f->Extra({kFirstKey, "achieved", "target", "unit", "phase", "saturated"}, &r.extra);
  return r;
}

std::string Summary::Format() const {
  JsonLine line;
  line.Add(kFirstKey, true).Add("injector", injector).Add("unit", unit).Add("mode", mode);
  line.Add("target_rate", target_rate).Add("achieved_rate", achieved_rate);
  line.Add("peak_rate", peak_rate).Add("cov", cov).Add("seconds", seconds);
  if (level >= 0) line.Add("level", level);
  line.Add("saturated", saturated).Add("stopped_by_signal", stopped_by_signal);
  for (const auto& [k, v] : extra) line.Add(k, v);
  if (!notes.empty()) line.AddRaw("notes", Quoted(notes));
  return line.str();
}

Result<Summary> Summary::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  bool summary = false;
  CODL_PROTOCOL_TRY(f->Bool(kFirstKey, &summary));
  if (!summary) return InvalidArgument("'summary' must be true");
  Summary r;
  CODL_PROTOCOL_TRY(f->String("injector", &r.injector));
  CODL_PROTOCOL_TRY(f->String("unit", &r.unit));
  CODL_PROTOCOL_TRY(f->String("mode", &r.mode));
  CODL_PROTOCOL_TRY(f->Number("target_rate", &r.target_rate));
  CODL_PROTOCOL_TRY(f->Number("achieved_rate", &r.achieved_rate));
  CODL_PROTOCOL_TRY(f->Number("peak_rate", &r.peak_rate));
  CODL_PROTOCOL_TRY(f->Number("cov", &r.cov));
  CODL_PROTOCOL_TRY(f->Number("seconds", &r.seconds));
  CODL_PROTOCOL_TRY(f->Number("level", &r.level));
  CODL_PROTOCOL_TRY(f->Bool("saturated", &r.saturated));
  CODL_PROTOCOL_TRY(f->Bool("stopped_by_signal", &r.stopped_by_signal));
  CODL_PROTOCOL_TRY(f->Strings("notes", &r.notes));
  f->Extra({kFirstKey, "injector", "unit", "mode", "target_rate", "achieved_rate", "peak_rate",
            "cov", "seconds", "level", "saturated", "stopped_by_signal", "notes"},
           &r.extra);
  return r;
}

std::string StartAccount::Format() const {
  JsonLine line;
  line.Add(kFirstKey, started_unix_ns).Add("start_at_unix_ns", start_at_unix_ns);
  line.Add("ready_unix_ns", ready_unix_ns).Add("setup_s", setup_s);
  line.Add("setup_estimate_s", setup_estimate_s);
  return line.str();
}

Result<StartAccount> StartAccount::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  StartAccount r;
  CODL_PROTOCOL_TRY(f->Int(kFirstKey, &r.started_unix_ns));
  CODL_PROTOCOL_TRY(f->Int("start_at_unix_ns", &r.start_at_unix_ns));
  CODL_PROTOCOL_TRY(f->Int("ready_unix_ns", &r.ready_unix_ns));
  CODL_PROTOCOL_TRY(f->Number("setup_s", &r.setup_s));
  CODL_PROTOCOL_TRY(f->Number("setup_estimate_s", &r.setup_estimate_s));
  return r;
}

std::string FirstLoad::Format() const {
  JsonLine line;
  line.Add(kFirstKey, first_load_unix_ns);
  if (first_done_unix_ns > 0) line.Add("first_done_unix_ns", first_done_unix_ns);
  return line.str();
}

Result<FirstLoad> FirstLoad::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  FirstLoad r;
  CODL_PROTOCOL_TRY(f->Int(kFirstKey, &r.first_load_unix_ns));
  CODL_PROTOCOL_TRY(f->Int("first_done_unix_ns", &r.first_done_unix_ns));
  return r;
}

std::string RendezvousPublish::Format() const {
  JsonLine inner;
  inner.Add("key", key).Add("value_hex", HexEncode(value));
  return JsonLine().AddRaw(kFirstKey, inner.str()).str();
}

Result<RendezvousPublish> RendezvousPublish::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  auto inner = f->Object(kFirstKey);
  if (!inner.ok()) return inner.status();
  RendezvousPublish r;
  std::string hex;
  CODL_PROTOCOL_TRY(inner->String("key", &r.key));
  CODL_PROTOCOL_TRY(inner->String("value_hex", &hex));
  if (r.key.empty()) return InvalidArgument("no key");
  auto value = HexDecode(hex);
  if (!value.ok()) return InvalidArgument("value_hex: " + value.error());
  r.value = std::move(*value);
  return r;
}

std::string VictimEnv::Format() const { return JsonLine().AddObject(kFirstKey, env).str(); }

Result<VictimEnv> VictimEnv::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  VictimEnv r;
  CODL_PROTOCOL_TRY(f->StringMap(kFirstKey, &r.env));
  return r;
}

std::string GpuLabels::Format() const { return JsonLine().AddObject(kFirstKey, labels).str(); }

Result<GpuLabels> GpuLabels::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  GpuLabels r;
  CODL_PROTOCOL_TRY(f->StringMap(kFirstKey, &r.labels));
  return r;
}

std::string MpsStatus::Format() const {
  JsonLine inner;
  inner.Add("pipe_dir", pipe_dir).Add("log_dir", log_dir).Add("started", started);
  return JsonLine().AddRaw(kFirstKey, inner.str()).str();
}

Result<MpsStatus> MpsStatus::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  auto inner = f->Object(kFirstKey);
  if (!inner.ok()) return inner.status();
  MpsStatus r;
  CODL_PROTOCOL_TRY(inner->String("pipe_dir", &r.pipe_dir));
  CODL_PROTOCOL_TRY(inner->String("log_dir", &r.log_dir));
  CODL_PROTOCOL_TRY(inner->Bool("started", &r.started));
  return r;
}

std::string Note::Format() const { return JsonLine().Add(kFirstKey, text).str(); }

Result<Note> Note::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  Note r;
  CODL_PROTOCOL_TRY(f->Require(kFirstKey));
  CODL_PROTOCOL_TRY(f->String(kFirstKey, &r.text));
  return r;
}

std::string ListEntry::Format() const {
  JsonLine line;
  line.Add(kFirstKey, name).Add("resource", resource).Add("unit", unit);
  line.Add("available", available).Add("reason", reason);
  return line.str();
}

Result<ListEntry> ListEntry::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  ListEntry r;
  CODL_PROTOCOL_TRY(f->String(kFirstKey, &r.name));
  CODL_PROTOCOL_TRY(f->String("resource", &r.resource));
  CODL_PROTOCOL_TRY(f->String("unit", &r.unit));
  CODL_PROTOCOL_TRY(f->Bool("available", &r.available));
  CODL_PROTOCOL_TRY(f->String("reason", &r.reason));
  if (r.name.empty()) return InvalidArgument("a list entry without a name");
  return r;
}

std::string Removed::Format() const { return JsonLine().Add(kFirstKey, path).str(); }

Result<Removed> Removed::Parse(std::string_view line) {
  auto f = Open(line, kFirstKey);
  if (!f.ok()) return f.status();
  Removed r;
  CODL_PROTOCOL_TRY(f->Require(kFirstKey));
  CODL_PROTOCOL_TRY(f->String(kFirstKey, &r.path));
  return r;
}

namespace {

template <class T>
bool TryKind(std::string_view first_key, std::string_view line, Result<Record>* out) {
  if (first_key != T::kFirstKey) return false;
  auto r = T::Parse(line);
  if (r.ok()) {
    *out = Record(std::move(*r));
  } else {
    *out = InvalidArgument(std::string(T::kFirstKey) + " record: " + r.error());
  }
  return true;
}

template <class... T>
bool Dispatch(std::variant<T...>*, std::string_view first_key, std::string_view line,
              Result<Record>* out) {
  return (TryKind<T>(first_key, line, out) || ...);
}

}  // namespace

Result<Record> ParseRecord(std::string_view line, std::string* kind) {
  if (kind != nullptr) kind->clear();
  // Cheap rejection of what is plainly not a record (human text on stdout).
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size() || line[i] != '{') return NotFound("not a codl-inject record");
  auto v = ParseJsonObject(line);
  if (!v.ok()) return NotFound("not a codl-inject record: " + v.error());
  const std::string first = v->keys.front();
  Result<Record> out = NotFound("not a codl-inject record (first key '" + first + "')");
  if (Dispatch(static_cast<Record*>(nullptr), first, line, &out) && kind != nullptr) {
    *kind = first;
  }
  return out;
}

std::string FormatRecord(const Record& record) {
  return std::visit([](const auto& r) { return r.Format(); }, record);
}

std::string RendezvousFetch::Format() const { return option + "=" + OptionValue(); }

std::string RendezvousFetch::OptionValue() const { return HexEncode(value); }

Result<RendezvousFetch> RendezvousFetch::Parse(std::string_view set_argument) {
  const size_t eq = set_argument.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument("expected OPTION=HEX, got '" + std::string(set_argument) + "'");
  }
  auto value = DecodeValue(set_argument.substr(eq + 1));
  if (!value.ok()) return value.status();
  return RendezvousFetch{std::string(set_argument.substr(0, eq)), std::move(*value)};
}

Result<std::string> RendezvousFetch::DecodeValue(std::string_view hex, size_t expected_bytes) {
  return expected_bytes == 0 ? HexDecode(hex) : HexDecode(hex, expected_bytes);
}

}  // namespace codl::injectors::protocol
