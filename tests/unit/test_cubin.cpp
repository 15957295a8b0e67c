// The cubin reader on malformed input, and the register-budget arithmetic. Reading real cubins
// is tested in tests/nvrtc, where NVRTC makes them.
#include <gtest/gtest.h>

#include "kagent/compile/cubin.hpp"

using namespace kagent;

TEST(Cubin, RejectsNonElf) {
  EXPECT_THROW(read_cubin_kernels("not an elf image at all, but long enough to pass the size check......"),
               std::runtime_error);
}

TEST(Cubin, RejectsTruncatedImage) {
  std::string img(64, '\0');
  img[0] = 0x7f;
  img[1] = 'E';
  img[2] = 'L';
  img[3] = 'F';
  img[4] = 2;
  img[0x28] = 0x40;  // section table beyond the end
  img[0x3a] = 64;
  img[0x3c] = 3;
  img[0x3e] = 1;
  EXPECT_THROW(read_cubin_kernels(img), std::runtime_error);
}

TEST(Cubin, MaxThreadsFromRegisters) {
  EXPECT_EQ(max_threads_for(32, 0), 1024);   // 1024 regs/warp -> 64 warps, capped at 1024 threads
  EXPECT_EQ(max_threads_for(64, 0), 1024);   // 2048 regs/warp -> 32 warps
  EXPECT_EQ(max_threads_for(128, 0), 512);   // 4096 regs/warp -> 16 warps
  EXPECT_EQ(max_threads_for(255, 0), 256);   // 8160 -> 8192 regs/warp -> 8 warps
  EXPECT_EQ(max_threads_for(72, 0), 896);    // 2304 regs/warp -> 28 warps
}

TEST(Cubin, LaunchBoundsCap) {
  EXPECT_EQ(max_threads_for(32, 256), 256);
  EXPECT_EQ(max_threads_for(128, 768), 512);
}
