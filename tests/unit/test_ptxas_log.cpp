#include <gtest/gtest.h>

#include "kagent/compile/ptxas_log.hpp"

using namespace kagent;

namespace {
// Verbatim from NVRTC 13.0 with --ptxas-options=-v (sm_90a).
constexpr const char* kLog = R"(ptxas info    : 6296 bytes gmem
ptxas info    : Compiling entry function 'k3' for 'sm_90a'
ptxas info    : Function properties for k3
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 29.801 ms
ptxas info    : Function properties for _Z6helperf
ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'k1' for 'sm_90a'
ptxas info    : Function properties for k1
ptxas         .     40 bytes stack frame, 24 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 7.938 ms
cand.cu(12): warning #177-D: variable "unused" was declared but never referenced
)";
}  // namespace

TEST(PtxasLog, ReadsEntryKernels) {
  auto m = parse_ptxas_log(kLog);
  ASSERT_TRUE(m.count("k1"));
  EXPECT_TRUE(m["k1"].is_entry);
  EXPECT_EQ(m["k1"].registers, 255);
  EXPECT_EQ(m["k1"].smem, 2048);
  EXPECT_EQ(m["k1"].stack_frame, 40);
  EXPECT_EQ(m["k1"].spill_stores, 24);
  EXPECT_EQ(m["k1"].spill_loads, 12);
  EXPECT_EQ(m["k3"].registers, 10);
  EXPECT_EQ(m["k3"].smem, 0);
}

TEST(PtxasLog, DeviceFunctionsAreNotEntries) {
  auto m = parse_ptxas_log(kLog);
  ASSERT_TRUE(m.count("_Z6helperf"));
  EXPECT_FALSE(m["_Z6helperf"].is_entry);
  EXPECT_EQ(m["_Z6helperf"].stack_frame, 16);
}

TEST(PtxasLog, StripKeepsWarningsOnly) {
  std::string s = strip_ptxas_info(kLog);
  EXPECT_EQ(s, "cand.cu(12): warning #177-D: variable \"unused\" was declared but never referenced\n");
}

TEST(PtxasLog, EmptyLog) { EXPECT_TRUE(parse_ptxas_log("").empty()); }
