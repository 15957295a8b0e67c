#include "kagent/common/versioned.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

void require_version(const nlohmann::json& j, int known, std::string_view what, std::string_view reader) {
  auto v = j.is_object() ? j.find("version") : j.end();
  if (v != j.end() && v->is_number_integer() && v->get<int64_t>() == known) return;
  const std::string got = v == j.end() ? std::string("no version") : fmt::format("version {}", v->dump());
  throw EnvError(fmt::format("{} has {}; this {} reads version {}", what, got, reader, known));
}

}  // namespace kagent
