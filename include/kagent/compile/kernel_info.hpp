#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kagent {

// What `kagent compile` reports per kernel, read from the cubin and from ptxas's verbose log.
struct KernelInfo {
  std::string name;
  int registers = 0;
  int64_t static_smem = 0;  // bytes the kernel declares (ptxas), excluding the 1 KiB system reserve
  int64_t stack_frame = 0;  // local memory per thread, bytes
  int64_t spill_stores = 0;
  int64_t spill_loads = 0;
  int max_threads_per_block = 0;  // from __launch_bounds__ and the register budget
  int launch_bounds = 0;          // __launch_bounds__ maxThreads, 0 when none
  std::vector<uint32_t> param_sizes;
};

// The resource table people and the model read: kernel, regs, smem, stack, spills, max threads,
// parameter count.
std::string render_kernel_table(const std::vector<KernelInfo>& kernels);

// JSON form used by `--json` output and the compile cache.
void to_json(nlohmann::json& j, const KernelInfo& k);
void from_json(const nlohmann::json& j, KernelInfo& k);

}  // namespace kagent
