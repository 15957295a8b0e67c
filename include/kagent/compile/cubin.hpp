#pragma once
// A minimal reader of the CUDA ELF (cubin) NVRTC produces: the entry kernels, their register
// counts, stack frames, launch bounds and parameter sizes (.nv.info attributes). It needs no GPU.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kagent {

struct CubinKernel {
  std::string name;
  int registers = 0;
  int64_t frame_size = 0;
  int max_threads = 0;  // EIATTR_MAX_THREADS product (launch bounds), 0 when absent
  std::vector<uint32_t> param_sizes;
  int64_t shared_section = 0;  // size of .nv.shared.<name> (includes reserved shared memory)
};

// Throws std::runtime_error on a malformed image.
std::vector<CubinKernel> read_cubin_kernels(std::string_view image);

// Largest block the register budget allows (Hopper/Ampere rules: 64K registers per block,
// allocated per warp in units of 256), capped by launch bounds and 1024.
int max_threads_for(int registers, int launch_bounds);

}  // namespace kagent
