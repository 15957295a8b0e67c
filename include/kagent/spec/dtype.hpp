#pragma once
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace kagent {

// Element types of tensors in op.json, scratch buffers and (later) PyTorch references.
enum class DType { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

// Accepts the short names used in op.json and plans: f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool.
std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType t);
size_t dtype_size(DType t);
bool dtype_is_float(DType t);
// The accepted names, for error messages ("expected one of ...") and the prompts: every DType, in
// the table's order, made from the same table as parse_dtype.
std::string_view dtype_choices();
// The CUDA C++ element type a kernel parameter points to for a tensor of this dtype ("float",
// "__half", "__nv_bfloat16", "long long", ...).
std::string_view dtype_c_type(DType t);
// Every DType, in the table's order.
const std::vector<DType>& all_dtypes();

}  // namespace kagent
