#pragma once
// Small helpers shared by the spec parsers (op.json and candidate plans); private to src/spec.
#include <algorithm>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kagent/common/json_text.hpp"

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
  return show_json(v);
}

using kagent::json_error_detail;

}  // namespace kagent::spec_detail
