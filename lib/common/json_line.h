// JsonLine: builds one JSON object on one line, for the JSON-lines streams that codl-inject and
// codl-victim print. std-only (the tools build without any JSON library); readers on the agent
// side use a real parser.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace codl {

std::string JsonEscape(std::string_view s);  // returns the quoted, escaped string

class JsonLine {
 public:
  JsonLine& Add(std::string_view key, double value);
  JsonLine& Add(std::string_view key, int64_t value);
  JsonLine& Add(std::string_view key, int value) { return Add(key, static_cast<int64_t>(value)); }
  JsonLine& Add(std::string_view key, uint64_t value) {
    return Add(key, static_cast<int64_t>(value));
  }
  JsonLine& Add(std::string_view key, bool value);
  JsonLine& Add(std::string_view key, std::string_view value);
  JsonLine& Add(std::string_view key, const char* value) {
    return Add(key, std::string_view(value));
  }
  JsonLine& AddObject(std::string_view key, const std::map<std::string, double>& values);
  JsonLine& AddObject(std::string_view key, const std::map<std::string, std::string>& values);
  JsonLine& AddRaw(std::string_view key, std::string_view raw_json);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void Key(std::string_view key);
  std::string body_;
};

}  // namespace codl
