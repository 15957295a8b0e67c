#pragma once
// Reading a JSON request's fields by name (request.cpp, session_request.cpp): each with its type
// and range checked, each at most once, and any other field refused, so that a typo ("tolerence")
// is an error naming it rather than a default silently used. Private to serve/.
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/json_parse.hpp"
#include "kagent/common/json_text.hpp"

#include "kagent/serve/request.hpp"

namespace kagent::serve {

using Json = nlohmann::json;

[[noreturn]] inline void bad(const std::string& field, const std::string& message) {
  throw RequestError(400, field, message);
}

inline Json parse_body(std::string_view body, const RequestLimits& limits) {
  if (body.size() > limits.max_body_bytes)
    throw RequestError(413, "body", fmt::format("{} bytes, over the limit of {}", body.size(), limits.max_body_bytes));
  JsonLimits jl;
  jl.max_depth = 16;
  jl.max_keys = 256;
  jl.max_values = size_t{1} << 16;
  try {
    return parse_json<Json>(body, jl);
  } catch (const JsonTextError& e) {
    if (e.byte() != std::string_view::npos)
      bad("body", fmt::format("not valid JSON at byte {}: {}", e.byte(), e.what()));
    bad(e.path().empty() ? "body" : e.path(), e.what());
  }
}

// Reads one object's fields, each at most once; unknown() names the first field nobody asked for.
class Fields {
 public:
  Fields(const Json& j, std::string prefix) : j_(j), prefix_(std::move(prefix)) {
    if (!j.is_object())
      bad(prefix_.empty() ? "body" : prefix_, fmt::format("expected a JSON object, got {}", show_json(j)));
  }
  std::string name(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  const Json* get(const std::string& key) {
    seen_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  void unknown() const {
    for (const auto& [key, v] : j_.items())
      if (!seen_.count(key)) bad(name(key), "unknown field");
  }

  std::string string(const std::string& key, bool required, size_t max_bytes, int too_long_status = 400) {
    const Json* v = get(key);
    if (!v) {
      if (required) bad(name(key), "missing (a string is required)");
      return {};
    }
    if (!v->is_string()) bad(name(key), fmt::format("expected a string, got {}", show_json(*v)));
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > max_bytes)
      throw RequestError(too_long_status, name(key),
                         fmt::format("{} bytes, over the limit of {}", s.size(), max_bytes));
    return s;
  }
  std::optional<bool> boolean(const std::string& key) {
    const Json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) bad(name(key), fmt::format("expected true or false, got {}", show_json(*v)));
    return v->get<bool>();
  }
  std::optional<double> number(const std::string& key, double lo, double hi, bool lo_open = false) {
    const Json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) bad(name(key), fmt::format("expected a number, got {}", show_json(*v)));
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
      bad(name(key),
          fmt::format("{} is out of range: expected {}{:g} to {:g}", show_json(*v), lo_open ? "above " : "", lo, hi));
    return x;
  }
  std::optional<int> integer(const std::string& key, int lo, int hi) {
    const Json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) bad(name(key), fmt::format("expected an integer, got {}", show_json(*v)));
    // An unsigned value above int64's range is out of range as any other too large one.
    const bool huge = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
    const int64_t x = huge ? int64_t{hi} + 1 : v->get<int64_t>();
    if (x < lo || x > hi) bad(name(key), fmt::format("{} is out of range: expected {} to {}", show_json(*v), lo, hi));
    return static_cast<int>(x);
  }

 private:
  const Json& j_;
  std::string prefix_;
  std::set<std::string> seen_;
};

// The fields every judged request shares (precision, atol/rtol/tolerance, trials, timing,
// timeout_s, measure), read into `c` over the service's default preset.
void read_judging(Fields& f, const RequestLimits& limits, judge::CandidateRequest& c);

}  // namespace kagent::serve
