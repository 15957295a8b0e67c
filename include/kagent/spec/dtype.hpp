#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace kagent {

// Element types of tensors in op.json, scratch buffers and (later) PyTorch references.
enum class DType { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

// Accepts the short names used in op.json and plans: f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool.
std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType t);
size_t dtype_size(DType t);
bool dtype_is_float(DType t);
// The accepted names, for error messages ("expected one of ...").
std::string_view dtype_choices();

}  // namespace kagent
