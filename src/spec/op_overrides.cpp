#include "kagent/spec/op_overrides.hpp"

#include <cmath>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

namespace {

void check_tolerance(const std::optional<double>& v, const char* flag) {
  if (v && !(std::isfinite(*v) && *v >= 0))
    throw InputError(fmt::format("{} {}: expected a finite number >= 0", flag, *v));
}

}  // namespace

void OpOverrides::validate() const {
  check_tolerance(atol, "--atol");
  check_tolerance(rtol, "--rtol");
}

void OpOverrides::apply(Op& op) const {
  validate();
  if (atol) op.tolerance.atol = *atol;
  if (rtol) op.tolerance.rtol = *rtol;
}

std::vector<std::string> OpOverrides::to_args() const {
  std::vector<std::string> a;
  // {} prints the shortest text that reads back as the same double.
  if (atol) a.insert(a.end(), {"--atol", fmt::format("{}", *atol)});
  if (rtol) a.insert(a.end(), {"--rtol", fmt::format("{}", *rtol)});
  return a;
}

}  // namespace kagent
