#pragma once
// Reading a launch plan's JSON: errors as "<path>:<plan line>: plan key <key>: <what>", and the
// integers-or-expressions every sized key takes. Shared by the plan parser (candidate.cpp) and the
// library steps' parser (library_step_parse.cpp); private to src/spec.
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kagent/common/error.hpp"
#include "kagent/spec/expr.hpp"
#include "text_util.hpp"

namespace kagent::spec_detail {

// ordered_json keeps the plan's order of scratch buffers, so allocation follows the file.
using PlanJsonValue = nlohmann::ordered_json;

class PlanJson {
 public:
  PlanJson(std::string path, int plan_line) : path_(std::move(path)), line_(plan_line) {}

  std::string where(const std::string& key) const { return fmt::format("{}:{}: plan key {}", path_, line_, key); }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(fmt::format("{}: {}", where(key), what));
  }

  // A JSON integer or a string holding an expression (grid, block, smem, scratch shapes, sizes).
  // min_literal rejects literal values that can never be valid (a grid of 0, a negative smem).
  Expr expr_item(const PlanJsonValue& v, const std::string& key, int64_t min_literal) const {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(key, fmt::format("{} is too large", show(v)));
      }
      int64_t value = v.get<int64_t>();
      if (value < min_literal) fail(key, fmt::format("expected an integer >= {}, got {}", min_literal, value));
      return Expr::constant(value);
    }
    if (v.is_string()) return expr_text(v.get<std::string>(), key);
    fail(key, fmt::format("expected an integer or an expression string, got {}", show(v)));
  }

  Expr expr_text(const std::string& text, const std::string& key) const {
    try {
      return Expr::parse(text);
    } catch (const ExprError& e) {
      const std::string shown = text.size() > 60 ? text.substr(0, 57) + "..." : text;
      fail(key, fmt::format("bad expression '{}': {}", shown, e.what()));
    }
  }

  std::vector<Expr> dims(const PlanJsonValue& v, const std::string& key, size_t max_items, int64_t min_literal) const {
    if (!v.is_array() || v.empty() || v.size() > max_items) {
      std::string got = v.is_array() ? fmt::format("{} items", v.size()) : std::string(v.type_name());
      if (max_items <= 3)
        fail(key, fmt::format("expected an array of 1 to {} integers or expressions, got {}", max_items, got));
      fail(key, fmt::format("expected a non-empty array of integers or expressions, got {}", got));
    }
    std::vector<Expr> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back(expr_item(v[i], fmt::format("{}[{}]", key, i), min_literal));
    return out;
  }

 protected:
  std::string path_;
  int line_;
};

}  // namespace kagent::spec_detail
