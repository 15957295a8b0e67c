#include "kagent/common/utf8.hpp"

#include <cstdint>

namespace kagent {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed sequence at `text[i]`, or 0 when there is none there; then
// `*bad` is the length of the maximal subpart to replace (at least 1). Table 3-7 of the Unicode
// standard: the second byte's range depends on the first, which excludes overlong forms (E0, F0),
// surrogates (ED) and code points above U+10FFFF (F4).
size_t sequence_at(std::string_view text, size_t i, size_t* bad) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *bad = 1;  // a continuation byte alone, C0, C1 or F5..FF: never part of a character
    return 0;
  }
  size_t k = 1;
  for (; k < need && i + k < text.size(); ++k) {
    const uint8_t b = byte(i + k);
    const bool fits = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
    if (!fits) break;
  }
  if (k == need) return need;
  *bad = k;  // the lead and the continuation bytes that fitted: one replacement for them all
  return 0;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t bad = 0;
    const size_t n = sequence_at(text, i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  size_t i = 0;
  // The common case, valid text, is one scan and one copy.
  for (size_t bad = 0; i < text.size();) {
    const size_t n = sequence_at(text, i, &bad);
    if (n == 0) break;
    i += n;
  }
  if (i == text.size()) return std::string(text);
  out.reserve(text.size() + 16);
  out.append(text.substr(0, i));
  while (i < text.size()) {
    size_t bad = 0;
    const size_t n = sequence_at(text, i, &bad);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      i += bad;
    }
  }
  return out;
}

std::string cut_with_ellipsis(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes > 3 ? max_bytes - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return std::string(text.substr(0, cut)) + "...";
}

bool make_valid_utf8(std::string& text) {
  if (is_valid_utf8(text)) return false;
  text = valid_utf8(text);
  return true;
}

std::string first_line(std::string_view text, size_t max_bytes) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  size_t b = 0;
  while (b < text.size() && blank(text[b])) ++b;
  size_t e = text.find('\n', b);
  if (e == std::string_view::npos) e = text.size();
  while (e > b && blank(text[e - 1])) --e;
  return cut_with_ellipsis(text.substr(b, e - b), max_bytes);
}

}  // namespace kagent
