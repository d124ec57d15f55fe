#include "injectors/core/json_reader.h"

#include <cstdint>

namespace codl::injectors::json {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  Result<Value> Document() {
    Value v;
    SkipSpace();
    if (!ParseValue(v, 0)) return InvalidArgument(error_);
    SkipSpace();
    if (pos_ != s_.size()) return InvalidArgument(At("trailing characters"));
    return v;
  }

 private:
  static constexpr int kMaxDepth = 8;

  std::string At(const std::string& why) const {
    return why + " at offset " + std::to_string(pos_);
  }
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = At(why);
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool ParseValue(Value& v, int depth) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    if (pos_ >= s_.size()) return Fail("unexpected end");
    switch (s_[pos_]) {
      case '{': return ParseObject(v, depth);
      case '[': return ParseArray(v, depth);
      case '"': v.kind = Value::Kind::kString; return ParseString(v.text);
      case 't':
        v.kind = Value::Kind::kBool;
        v.boolean = true;
        return Literal("true");
      case 'f':
        v.kind = Value::Kind::kBool;
        v.boolean = false;
        return Literal("false");
      case 'n': v.kind = Value::Kind::kNull; return Literal("null");
      default: v.kind = Value::Kind::kNumber; return ParseNumber(v.text);
    }
  }

  bool ParseObject(Value& v, int depth) {
    v.kind = Value::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (Eat('}')) return true;
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a key");
      if (!ParseString(key)) return false;
      SkipSpace();
      if (!Eat(':')) return Fail("expected ':'");
      SkipSpace();
      Value item;
      if (!ParseValue(item, depth + 1)) return false;
      v.keys.push_back(std::move(key));
      v.items.push_back(std::move(item));
      SkipSpace();
      if (Eat('}')) return true;
      if (!Eat(',')) return Fail("expected ',' or '}'");
    }
  }

  bool ParseArray(Value& v, int depth) {
    v.kind = Value::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (Eat(']')) return true;
    while (true) {
      SkipSpace();
      Value item;
      if (!ParseValue(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      SkipSpace();
      if (Eat(']')) return true;
      if (!Eat(',')) return Fail("expected ',' or ']'");
    }
  }

  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > s_.size()) return Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Fail("bad \\u escape");
      }
    }
    *out = v;
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool ParseString(std::string& out) {
    ++pos_;  // '"'
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      switch (s_[pos_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            uint32_t low = 0;
            if (!Eat('\\') || !Eat('u') || !Hex4(&low) || low < 0xdc00 || low >= 0xe000) {
              return Fail("unpaired surrogate");
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            return Fail("unpaired surrogate");
          }
          AppendUtf8(cp, out);
          break;
        }
        default: return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }

  // JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, kept as written.
  bool ParseNumber(std::string& out) {
    const size_t begin = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > from;
    };
    Eat('-');
    if (Eat('0')) {
    } else if (!digits()) {
      return Fail("expected a value");
    }
    if (Eat('.') && !digits()) return Fail("bad number");
    if (Eat('e') || Eat('E')) {
      if (!Eat('+')) Eat('-');
      if (!digits()) return Fail("bad number");
    }
    out = std::string(s_.substr(begin, pos_ - begin));
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

Result<Value> Parse(std::string_view text) { return Reader(text).Document(); }

}  // namespace codl::injectors::json
