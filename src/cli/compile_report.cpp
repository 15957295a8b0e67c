#include "compile_report.hpp"

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"

namespace kagent::cli {

std::string render_kernel_table(const CompileResult& r) {
  return kagent::render_kernel_table(r.kernels);
}

nlohmann::json compile_json(const std::string& path, const CompileResult& r) {
  return {{"candidate", path},    {"ok", r.ok},   {"arch", r.arch},       {"cache_hit", r.cache_hit},
          {"seconds", r.seconds}, {"log", r.log}, {"kernels", r.kernels}, {"options", r.options}};
}

}  // namespace kagent::cli
