// Text from outside (a child's stderr, a victim's stdout) is bytes; proto `string` fields and
// JSON must be valid UTF-8 or the whole message is refused. One repair, used wherever such text
// crosses into a message.
#pragma once

#include <string>
#include <string_view>

namespace codl {

// `text` with every byte that does not start a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence — e.g. a tail cut
// inside a character) replaced by U+FFFD. Valid text comes back unchanged.
std::string ValidUtf8(std::string_view text);

// The last `max_bytes` bytes of `text` (or all of it), cut on a character boundary and repaired
// with ValidUtf8: for error messages that quote a child's output.
std::string Utf8Tail(std::string_view text, size_t max_bytes);

// For a terminal: ValidUtf8(text) with control characters (C0 other than tab, DEL, and the C1
// range) written as \xNN, so text from a victim or an experiment file cannot move the cursor,
// clear the screen or retitle the window of whoever reads results.
std::string TerminalSafe(std::string_view text);

// `text` broken at spaces into lines of at most `width` display columns (a word longer than
// that stays whole; UTF-8 continuation bytes take no column), every line after the first
// starting with `indent`, joined with '\n' (none at the end). For terminal tables' prose.
std::string WrapWords(std::string_view text, size_t width, std::string_view indent);

}  // namespace codl
