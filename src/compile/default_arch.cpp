#include "kagent/compile/default_arch.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/gpu/devices.hpp"

namespace kagent {

std::string default_arch(int gpu, std::string* source) {
  GpuInventory inv = query_gpus();
  if (inv.gpus.empty()) {
    if (source) *source = "default: no GPU found";
    return kNoGpuArch;
  }
  if (gpu < 0 || gpu >= static_cast<int>(inv.gpus.size()))
    throw InputError(fmt::format("--gpu {}: this machine has {} GPU(s), numbered 0 to {}", gpu, inv.gpus.size(),
                                 inv.gpus.size() - 1));
  const GpuInfo& g = inv.gpus[static_cast<size_t>(gpu)];
  if (source) *source = fmt::format("GPU {}: {}", g.index, g.name);
  return arch_for_capability(g.cc_major, g.cc_minor);
}

}  // namespace kagent
