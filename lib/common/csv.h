// CSV cells as RFC 4180 and spreadsheets want them: quoting, and text that a spreadsheet would
// otherwise run as a formula neutralized (every CSV CoDL writes goes through these).
#pragma once

#include <string>

namespace codl {

// A text cell that a spreadsheet would run as a formula (=, +, @, a tab or CR first, or '-'
// before a non-number) gets a leading apostrophe (the OWASP CSV-injection rule). Numbers are
// formatted by the caller and never pass through here. Control characters (and invalid UTF-8)
// are written as \xNN first, as on the terminal (TerminalSafe): CSV files are read there too.
std::string CsvText(const std::string& s);

// The cell quoted when it holds a comma, quote or line break (quotes doubled).
std::string CsvField(const std::string& s);

}  // namespace codl
