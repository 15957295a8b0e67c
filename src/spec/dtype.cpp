#include "kagent/spec/dtype.hpp"

#include <array>
#include <string>

namespace kagent {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
  bool is_float;
  std::string_view c_type;  // what a kernel parameter points to
};

// One table so names, sizes and parsing can never disagree.
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::f32, "f32", 4, true, "float"},
    {DType::f16, "f16", 2, true, "__half"},
    {DType::bf16, "bf16", 2, true, "__nv_bfloat16"},
    {DType::f64, "f64", 8, true, "double"},
    {DType::i64, "i64", 8, false, "long long"},
    {DType::i32, "i32", 4, false, "int"},
    {DType::i16, "i16", 2, false, "short"},
    {DType::i8, "i8", 1, false, "signed char"},
    {DType::u8, "u8", 1, false, "unsigned char"},
    {DType::boolean, "bool", 1, false, "bool"},
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
  static const std::string choices = [] {
    std::string s;
    for (const auto& entry : kDTypes) {
      if (!s.empty()) s += ", ";
      s += entry.name;
    }
    return s;
  }();
  return choices;
}

std::string_view dtype_c_type(DType t) {
  return info(t).c_type;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = [] {
    std::vector<DType> v;
    for (const auto& entry : kDTypes) v.push_back(entry.type);
    return v;
  }();
  return all;
}

}  // namespace kagent
