#include "kagent/spec/device_constants.hpp"

namespace kagent {

const std::vector<std::string>& device_constant_names() {
  static const std::vector<std::string> names = {"num_sms"};
  return names;
}

std::optional<ExprValue> device_constant(std::string_view name, const DeviceConstants& d) {
  if (name == "num_sms") return ExprValue{true, d.num_sms, 0.0};
  return std::nullopt;
}

}  // namespace kagent
