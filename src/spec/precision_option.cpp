#include "kagent/spec/precision_option.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

Precision precision_option(const std::string& text) {
  if (auto p = parse_precision(text)) return *p;
  throw InputError(fmt::format("--precision '{}': expected one of {}", text, kPrecisionChoices));
}

}  // namespace kagent
