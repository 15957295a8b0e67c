#pragma once
// JSON in error messages: a short rendering of a value for "got ...", and nlohmann's parse error
// without its own position (callers name the file and line themselves).
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kagent {

// At most 60 characters of the value's JSON ("..." when cut); invalid UTF-8 replaced.
template <class Json>
std::string show_json(const Json& v) {
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix
// (inside a candidate, nlohmann's lines count from the plan block, not the file, and mislead).
inline std::string json_error_detail(const nlohmann::json::parse_error& e) {
  std::string_view what = e.what();
  size_t at = what.find("parse error");
  if (at != std::string_view::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string_view::npos) return std::string(what.substr(colon + 2));
  }
  return std::string(what);
}

}  // namespace kagent
