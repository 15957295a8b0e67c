#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kagent {

// Where the CUDA toolkit's headers are (cuda_fp16.h, mma.h, cooperative_groups, CCCL's cuda/).
// $KAGENT_CUDA_HOME overrides the toolkit kagent was built against.
struct CudaPaths {
  std::filesystem::path include_dir;
  std::filesystem::path cccl_dir;  // include_dir/cccl when present
};
CudaPaths find_cuda_paths();

// The harness's NVRTC options for an architecture such as "sm_90a", followed by the candidate's.
std::vector<std::string> harness_options(const std::string& arch, const CudaPaths& paths);

// The headers the prompts tell a candidate it may include, in the order they list them. NVRTC gets
// the toolkit's include folder and CCCL's (harness_options), so other device headers there work too;
// these are the ones kagent promises: tests/nvrtc compiles a candidate including each of them, and
// shows that host headers (<cstdint>, <cmath>) are not there. The prompts render this list.
const std::vector<std::string_view>& candidate_headers();

// The number of an "sm_90a" style name (90); nullopt when the text has another form.
std::optional<int> arch_number(std::string_view arch);
// "sm_90a" style names: checked against what this NVRTC supports; throws InputError otherwise.
void check_arch(const std::string& arch);
// The architecture name for a compute capability: Hopper and newer get their "a" target.
std::string arch_for_capability(int major, int minor);
// The compile target when no GPU says otherwise (a machine without one, no --arch).
inline constexpr const char* kNoGpuArch = "sm_90a";

}  // namespace kagent
