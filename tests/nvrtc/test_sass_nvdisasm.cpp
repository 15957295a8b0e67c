// The toolkit's nvdisasm on cubins NVRTC made: a kernel that keeps a dynamically indexed local
// array shows local-memory stores and loads; a plain vector add shows none and its global loads.
// Skips, with the reason, where the toolkit has no nvdisasm (some CI images ship NVRTC only).
#include <gtest/gtest.h>

#include "kagent/compile/compiler.hpp"
#include "kagent/compile/sass.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "test_util.hpp"

using namespace kagent;

TEST(SassNvdisasm, LocalArraysShowAsLocalMemoryAndPlainKernelsDoNot) {
  if (!find_nvdisasm(find_cuda_paths())) GTEST_SKIP() << "no nvdisasm in this CUDA toolkit";
  Compiler compiler(find_cuda_paths(), nullptr);
  const std::string src = R"(/*kagent
{"launch": [{"kernel": "local_array", "grid": [1], "block": [32], "args": ["a", "out", "i32:n"]},
            {"kernel": "plain", "grid": [1], "block": [32], "args": ["a", "out", "i32:n"]}]}
*/
extern "C" __global__ void local_array(const float* a, float* out, int n) {
  float t[64];
  for (int i = 0; i < 64; ++i) t[i] = a[(threadIdx.x + i) % n];
  out[threadIdx.x] = t[(threadIdx.x * 7 + n) % 64];
}
extern "C" __global__ void plain(const float* a, float* out, int n) {
  if (static_cast<int>(threadIdx.x) < n) out[threadIdx.x] = a[threadIdx.x] * 2.0f;
}
)";
  auto r = compiler.compile(parse_candidate(src, "sass.cu"), "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  auto fns = disassemble(r.cubin, find_cuda_paths());
  ASSERT_EQ(fns.size(), 2u) << render_sass(fns, true);
  for (const auto& f : fns) {
    SCOPED_TRACE(f.name);
    EXPECT_GT(f.instructions, 3);
    EXPECT_GE(f.opcodes.count("EXIT"), 1u);
    if (f.name == "local_array") {
      EXPECT_GT(f.local_stores, 0) << render_sass(fns, true, f.name);
      EXPECT_GT(f.local_loads, 0) << render_sass(fns, true, f.name);
    } else {
      EXPECT_EQ(f.name, "plain");
      EXPECT_EQ(f.local_loads + f.local_stores, 0);
      EXPECT_GE(f.opcodes.count("LDG"), 1u) << render_sass(fns, true, f.name);
    }
  }
  // -lineinfo is on: the listing carries the source lines.
  EXPECT_NE(render_sass(fns, true).find("line "), std::string::npos);
}
