#include "kagent/compile/kernel_info.hpp"

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"

#include <nlohmann/json.hpp>

namespace kagent {

std::string render_kernel_table(const std::vector<KernelInfo>& kernels) {
  TextTable t({"kernel", "regs", "smem B", "stack B", "spill st/ld B", "max threads", "params"});
  for (const auto& k : kernels) {
    std::string max_threads = std::to_string(k.max_threads_per_block);
    if (k.launch_bounds > 0) max_threads += " (bound)";
    t.add_row({k.name, std::to_string(k.registers), std::to_string(k.static_smem), std::to_string(k.stack_frame),
               fmt::format("{}/{}", k.spill_stores, k.spill_loads), max_threads, std::to_string(k.param_sizes.size())});
  }
  return t.render();
}

void to_json(nlohmann::json& j, const KernelInfo& k) {
  j = nlohmann::json{{"name", k.name},
                     {"registers", k.registers},
                     {"static_smem_bytes", k.static_smem},
                     {"stack_frame_bytes", k.stack_frame},
                     {"spill_store_bytes", k.spill_stores},
                     {"spill_load_bytes", k.spill_loads},
                     {"max_threads_per_block", k.max_threads_per_block},
                     {"launch_bounds", k.launch_bounds},
                     {"param_sizes", k.param_sizes}};
}

void from_json(const nlohmann::json& j, KernelInfo& k) {
  j.at("name").get_to(k.name);
  j.at("registers").get_to(k.registers);
  j.at("static_smem_bytes").get_to(k.static_smem);
  j.at("stack_frame_bytes").get_to(k.stack_frame);
  j.at("spill_store_bytes").get_to(k.spill_stores);
  j.at("spill_load_bytes").get_to(k.spill_loads);
  j.at("max_threads_per_block").get_to(k.max_threads_per_block);
  j.at("launch_bounds").get_to(k.launch_bounds);
  j.at("param_sizes").get_to(k.param_sizes);
}

}  // namespace kagent
