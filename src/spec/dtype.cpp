#include "kagent/spec/dtype.hpp"

#include <array>

namespace kagent {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
  bool is_float;
};

// One table so names, sizes and parsing can never disagree.
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::f32, "f32", 4, true},
    {DType::f16, "f16", 2, true},
    {DType::bf16, "bf16", 2, true},
    {DType::f64, "f64", 8, true},
    {DType::i64, "i64", 8, false},
    {DType::i32, "i32", 4, false},
    {DType::i16, "i16", 2, false},
    {DType::i8, "i8", 1, false},
    {DType::u8, "u8", 1, false},
    {DType::boolean, "bool", 1, false},
}};

const DTypeInfo& info(DType t) {
  for (const auto& entry : kDTypes) {
    if (entry.type == t) return entry;
  }
  return kDTypes[0];  // unreachable: every enumerator is in the table
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (entry.name == name) return entry.type;
  }
  return std::nullopt;
}

std::string_view dtype_name(DType t) {
  return info(t).name;
}

size_t dtype_size(DType t) {
  return info(t).size;
}

bool dtype_is_float(DType t) {
  return info(t).is_float;
}

std::string_view dtype_choices() {
  return "f32, f16, bf16, f64, i64, i32, i16, i8, u8, bool";
}

}  // namespace kagent
