// The torch-operators policy's names and what counts as bookkeeping (kagent/protocol/torch_ops.hpp).
#include "kagent/protocol/torch_ops.hpp"

#include <array>

namespace kagent {

namespace {

constexpr std::array<std::pair<TorchOps, std::string_view>, 3> kNames{
    {{TorchOps::fail, "fail"}, {TorchOps::cap, "cap"}, {TorchOps::allow, "allow"}}};

// Operators that allocate or fill with a constant; matched on the whole name.
constexpr std::string_view kAllocating[] = {
    "aten::empty",    "aten::empty_like", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided",
    "aten::zeros",    "aten::zeros_like", "aten::new_zeros",     "aten::ones",      "aten::ones_like",
    "aten::new_ones", "aten::full",       "aten::full_like",     "aten::new_full",  "aten::fill_",
    "aten::zero_",    "aten::resize_",
};

}  // namespace

std::string_view torch_ops_name(TorchOps p) {
  for (const auto& [value, name] : kNames)
    if (value == p) return name;
  return "?";
}

std::optional<TorchOps> parse_torch_ops(std::string_view name) {
  for (const auto& [value, n] : kNames)
    if (n == name) return value;
  return std::nullopt;
}

bool torch_op_only_allocates(std::string_view op) {
  for (std::string_view a : kAllocating)
    if (op == a) return true;
  return false;
}

}  // namespace kagent
