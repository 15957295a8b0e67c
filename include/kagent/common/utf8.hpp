#pragma once
// Text that is valid UTF-8, whatever bytes it came from. Everything that enters a conversation
// with a model (tool results: files, shell and compiler output; the model's own replies) is JSON
// on the wire and in the transcript, and JSON strings are UTF-8: one stray byte from `cat` of a
// binary file would otherwise make the request unserialisable and end the run.
#include <string>
#include <string_view>

namespace kagent {

// Whether `text` is well-formed UTF-8 (Unicode Table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF, no truncated sequences). NUL is a valid character.
bool is_valid_utf8(std::string_view text);

// `text` with each ill-formed part replaced by U+FFFD (the replacement character, bytes EF BF BD):
// one per maximal subpart, as the Unicode standard recommends and browsers do ("\xC3" before an
// ASCII letter is one U+FFFD, the overlong "\xC0\xAF" two, the surrogate "\xED\xA0\x80" three).
// Valid text comes back byte for byte.
std::string valid_utf8(std::string_view text);

// In place; returns whether anything was replaced.
bool make_valid_utf8(std::string& text);

// `text` whole when it has at most `max_bytes` bytes; else its head, cut where no UTF-8 character
// is split, with "..." after it, max_bytes in all (for messages that quote outside text).
std::string cut_with_ellipsis(std::string_view text, size_t max_bytes);

// The first non-blank line of text, cut to at most max_bytes as cut_with_ellipsis cuts: the
// one-line form of an error for a message attribute, a table cell or a line of a prompt.
std::string first_line(std::string_view text, size_t max_bytes);

}  // namespace kagent
