#include "lib/common/csv.h"

#include <cctype>

#include "lib/common/utf8.h"

namespace codl {

std::string CsvText(const std::string& raw) {
  // Control characters as \xNN (TerminalSafe): a CSV is read on terminals too (`cat`, `less`).
  const std::string s = TerminalSafe(raw);
  if (s.empty()) return s;
  const char c = s[0];
  const bool number_after_minus =
      c == '-' && s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
  if (c == '=' || c == '+' || c == '@' || c == '\t' || c == '\r' ||
      (c == '-' && !number_after_minus && s.size() > 1)) {
    return "'" + s;
  }
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace codl
