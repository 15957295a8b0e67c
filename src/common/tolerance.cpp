// The tolerance's one JSON reader for records and its one text (see kagent/common/tolerance.hpp).
#include "kagent/common/tolerance.hpp"

#include <fmt/format.h>

namespace kagent {

std::optional<Tolerance> recorded_tolerance(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  auto a = j.find("atol"), r = j.find("rtol");
  if (a == j.end() || r == j.end() || !a->is_number() || !r->is_number()) return std::nullopt;
  return Tolerance{a->get<double>(), r->get<double>()};
}

std::string tolerance_text(const Tolerance& t) {
  return fmt::format("atol {:g}, rtol {:g}", t.atol, t.rtol);
}

}  // namespace kagent
