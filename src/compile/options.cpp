#include "kagent/compile/options.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kagent/common/error.hpp"

namespace kagent {

CudaPaths find_cuda_paths() {
  CudaPaths p;
  if (const char* home = std::getenv("KAGENT_CUDA_HOME"); home != nullptr && *home != '\0') {
    p.include_dir = std::filesystem::path(home) / "include";
  } else {
    p.include_dir = KAGENT_CUDA_INCLUDE_DIR;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(p.include_dir / "cccl", ec)) p.cccl_dir = p.include_dir / "cccl";
  return p;
}

std::vector<std::string> harness_options(const std::string& arch, const CudaPaths& paths) {
  std::vector<std::string> opts = {
      "--gpu-architecture=" + arch,
      "-std=c++17",
      "-I" + paths.include_dir.string(),
  };
  if (!paths.cccl_dir.empty()) opts.push_back("-I" + paths.cccl_dir.string());
  // -v for the per-kernel resource table; -lineinfo so profilers can map back to source lines
  // (it does not change the generated code).
  opts.push_back("--ptxas-options=-v");
  opts.push_back("-lineinfo");
  return opts;
}

const std::vector<std::string_view>& candidate_headers() {
  static const std::vector<std::string_view> headers = {"cuda_fp16.h",
                                                        "cuda_bf16.h",
                                                        "cuda_fp8.h",
                                                        "mma.h",
                                                        "cooperative_groups.h",
                                                        "cooperative_groups/reduce.h",
                                                        "cooperative_groups/memcpy_async.h",
                                                        "cuda/pipeline",
                                                        "cuda/barrier",
                                                        "cuda/ptx",
                                                        "cuda/std/cstdint",
                                                        "cuda/std/limits",
                                                        "cuda/std/type_traits",
                                                        "math_constants.h"};
  return headers;
}

namespace {
std::vector<int> supported_archs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}
}  // namespace

// "sm_" then 2 or 3 digits and an optional 'a' or 'f'; a hand check (std::regex recursed per
// character and overflowed the stack on "sm_" and 100k digits).
std::optional<int> arch_number(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  arch.remove_prefix(3);
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) arch.remove_suffix(1);
  if (arch.size() < 2 || arch.size() > 3) return std::nullopt;
  int number = 0;
  for (char c : arch) {
    if (c < '0' || c > '9') return std::nullopt;
    number = number * 10 + (c - '0');
  }
  return number;
}

void check_arch(const std::string& arch) {
  auto number = arch_number(arch);
  if (!number) {
    std::string shown = arch.size() > 40 ? arch.substr(0, 37) + "..." : arch;
    throw InputError(fmt::format("--arch '{}': expected sm_XY, sm_XYa or sm_XYf (e.g. sm_90a)", shown));
  }
  auto archs = supported_archs();
  if (!archs.empty() && std::find(archs.begin(), archs.end(), *number) == archs.end())
    throw InputError(fmt::format("--arch '{}': this NVRTC supports sm_{}", arch, fmt::join(archs, ", sm_")));
}

std::string arch_for_capability(int major, int minor) {
  // Hopper and newer: the "a" target unlocks wgmma, setmaxnreg and friends; the cubin then runs
  // only on that exact architecture, which is the GPU the candidate is evaluated on.
  return fmt::format("sm_{}{}{}", major, minor, major >= 9 ? "a" : "");
}

}  // namespace kagent
