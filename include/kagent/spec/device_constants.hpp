#pragma once
// Names a launch plan's expressions may read besides the operator's scalar arguments: figures of
// the GPU the plan runs on. A persistent kernel sizes its grid (and its per-block scratch) from
// `num_sms` instead of hard-coding one GPU's 132. The runner binds them from the device; checks
// made without a GPU (plan limits at compile time) bind nominal values. An operator scalar of the
// same name comes first, everywhere, so an operator never changes meaning.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/spec/expr.hpp"

namespace kagent {

struct DeviceConstants {
  int64_t num_sms = 132;  // nominal (H100 SXM) until a device's own count is bound
};

// The names, for validation and for error messages: {"num_sms"}.
const std::vector<std::string>& device_constant_names();

// The value of a device constant, or nullopt for another name.
std::optional<ExprValue> device_constant(std::string_view name, const DeviceConstants& d);

}  // namespace kagent
