#include "lib/common/json_line.h"

#include <cmath>
#include <cstdio>

namespace codl {

std::string JsonEscape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonLine::Key(std::string_view key) {
  if (!body_.empty()) body_ += ',';
  body_ += JsonEscape(key);
  body_ += ':';
}

JsonLine& JsonLine::Add(std::string_view key, double value) {
  Key(key);
  if (!std::isfinite(value)) {
    body_ += "null";  // JSON has no NaN/Inf
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", value);
    body_ += buf;
  }
  return *this;
}

JsonLine& JsonLine::Add(std::string_view key, int64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::Add(std::string_view key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::Add(std::string_view key, std::string_view value) {
  Key(key);
  body_ += JsonEscape(value);
  return *this;
}

JsonLine& JsonLine::AddObject(std::string_view key, const std::map<std::string, double>& values) {
  JsonLine inner;
  for (const auto& [k, v] : values) inner.Add(k, v);
  return AddRaw(key, inner.str());
}

JsonLine& JsonLine::AddObject(std::string_view key,
                              const std::map<std::string, std::string>& values) {
  JsonLine inner;
  for (const auto& [k, v] : values) inner.Add(k, std::string_view(v));
  return AddRaw(key, inner.str());
}

JsonLine& JsonLine::AddRaw(std::string_view key, std::string_view raw_json) {
  Key(key);
  body_ += raw_json;
  return *this;
}

}  // namespace codl
