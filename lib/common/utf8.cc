#include "lib/common/utf8.h"

#include <algorithm>
#include <cstdio>

namespace codl {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence starting at text[i], or 0.
size_t SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceLength(text, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string Utf8Tail(std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    size_t start = text.size() - max_bytes;
    // Skip continuation bytes so the tail starts on a character (at most 3 of them).
    for (int k = 0;
         k < 3 && start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80;
         ++k) {
      ++start;
    }
    text.remove_prefix(start);
  }
  return ValidUtf8(text);
}

std::string TerminalSafe(std::string_view text) {
  const std::string valid = ValidUtf8(text);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto c = static_cast<unsigned char>(valid[i]);
    // C1 controls are U+0080..U+009F: UTF-8 0xC2 0x80..0x9F.
    const bool c1 = c == 0xC2 && i + 1 < valid.size() &&
                    static_cast<unsigned char>(valid[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(valid[i + 1]) <= 0x9F;
    if ((c < 0x20 && c != '\t') || c == 0x7F || c1) {
      const unsigned char shown = c1 ? static_cast<unsigned char>(valid[++i]) : c;
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", shown);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {
size_t Columns(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}
}  // namespace

std::string WrapWords(std::string_view text, size_t width, std::string_view indent) {
  // The first line keeps its own leading spaces (an indented detail line stays indented).
  const size_t lead = std::min(text.find_first_not_of(' '), text.size());
  std::string out, line(text.substr(0, lead));
  text.remove_prefix(lead);
  bool first = true;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    const size_t prefix = first ? 0 : Columns(indent);
    if (line.size() > (first ? lead : 0) && prefix + Columns(line) + 1 + Columns(word) > width) {
      out += (first ? "" : std::string(indent)) + line + "\n";
      first = false;
      line = std::string(word);
    } else {
      line += (line.size() == (first ? lead : 0) ? "" : " ") + std::string(word);
    }
    start = end + 1;
  }
  return out + (first ? "" : std::string(indent)) + line;
}

}  // namespace codl
