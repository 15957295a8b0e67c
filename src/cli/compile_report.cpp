#include "compile_report.hpp"

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"

namespace kagent::cli {

std::string render_kernel_table(const CompileResult& r) {
  TextTable t({"kernel", "regs", "smem B", "stack B", "spill st/ld B", "max threads", "params"});
  for (const auto& k : r.kernels) {
    std::string max_threads = std::to_string(k.max_threads_per_block);
    if (k.launch_bounds > 0) max_threads += " (bound)";
    t.add_row({k.name, std::to_string(k.registers), std::to_string(k.static_smem), std::to_string(k.stack_frame),
               fmt::format("{}/{}", k.spill_stores, k.spill_loads), max_threads,
               std::to_string(k.param_sizes.size())});
  }
  return t.render();
}

nlohmann::json compile_json(const std::string& path, const CompileResult& r) {
  return {{"candidate", path}, {"ok", r.ok},           {"arch", r.arch},     {"cache_hit", r.cache_hit},
          {"seconds", r.seconds}, {"log", r.log},       {"kernels", r.kernels}, {"options", r.options}};
}

}  // namespace kagent::cli
