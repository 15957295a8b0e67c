#pragma once
// Small helpers shared by the spec parsers (op.json and candidate plans); private to src/spec.
#include <algorithm>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kagent::spec_detail {

// C identifier: [A-Za-z_][A-Za-z0-9_]*. Tensor, scratch and kernel names must be one.
inline bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto start = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!start(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(), [&](char c) { return start(c) || (c >= '0' && c <= '9'); });
}

// Short rendering of a JSON value for "got ..." in messages.
inline std::string show(const nlohmann::ordered_json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix:
// callers report the position in the file themselves (inside a candidate, nlohmann's lines
// would count from the plan block, not the file, and only mislead).
inline std::string json_error_detail(const nlohmann::json::parse_error& e) {
  std::string_view what = e.what();
  size_t at = what.find("parse error");
  if (at != std::string_view::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string_view::npos) return std::string(what.substr(colon + 2));
  }
  return std::string(what);
}

}  // namespace kagent::spec_detail
