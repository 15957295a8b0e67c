// The one-word verdict on what bounds a kernel, from its counters.
#include <gtest/gtest.h>

#include "kagent/eval/profile_table.hpp"

using namespace kagent;
using namespace kagent::profile;

namespace {
KernelMetrics m(double dram, double sm, double occupancy) {
  return {"k", 0.1, dram, sm, occupancy, 50, 0};
}
}  // namespace

TEST(Limiter, MemoryComputeOrLatency) {
  EXPECT_EQ(classify(m(92, 15, 90)).kind, "memory-bound");
  EXPECT_NE(classify(m(92, 15, 90)).reason.find("DRAM at 92% of its peak (SM 15%)"), std::string::npos);
  EXPECT_EQ(classify(m(20, 85, 60)).kind, "compute-bound");
  EXPECT_EQ(classify(m(70, 75, 60)).kind, "compute-bound");  // both busy: the busier one
  EXPECT_EQ(classify(m(75, 70, 60)).kind, "memory-bound");
  EXPECT_EQ(classify(m(60, 10, 60)).kind, "memory-bound");  // the threshold is inclusive
  Limiter l = classify(m(30, 25, 20));
  EXPECT_EQ(l.kind, "latency-bound");
  EXPECT_NE(l.reason.find("achieved occupancy 20%: more warps"), std::string::npos) << l.reason;
  EXPECT_NE(classify(m(30, 25, 80)).reason.find("warps wait on dependencies"), std::string::npos);
}

TEST(Limiter, OccupancyFromTheLaunchShape) {
  // 256 threads, 32 registers, no shared memory: 8 blocks fill the SM's 2048 threads.
  Occupancy o = occupancy(256, 32, 0);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  // 255 registers per thread: the register file allows one 256-thread block.
  o = occupancy(256, 255, 0);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.limiter, "registers");
  // 100 KiB of shared memory per block: two blocks fit in 228 KiB.
  o = occupancy(128, 32, 100 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limiter, "shared memory");
}

// The tensor pipe is compute: an MMA kernel with its tensor pipe 61% busy and a modest SM % is
// compute-bound, not latency-bound (sm__throughput leaves the tensor pipe out).
TEST(Limiter, TensorPipeActivityIsCompute) {
  KernelMetrics mma = m(20, 35, 40);
  mma.tensor_pct = 61;
  Limiter l = classify(mma);
  EXPECT_EQ(l.kind, "compute-bound");
  EXPECT_NE(l.reason.find("tensor pipe busy 61% of the time (SM 35%, DRAM 20%)"), std::string::npos) << l.reason;
  // DRAM busier than the tensor pipe: memory-bound still.
  KernelMetrics streaming = m(85, 20, 80);
  streaming.tensor_pct = 70;
  EXPECT_EQ(classify(streaming).kind, "memory-bound");
  // A quiet tensor pipe changes nothing, and the latency reason names it.
  KernelMetrics idle = m(30, 25, 20);
  idle.tensor_pct = 5;
  EXPECT_EQ(classify(idle).kind, "latency-bound");
  EXPECT_NE(classify(idle).reason.find("nor the tensor pipe (5%)"), std::string::npos) << classify(idle).reason;
}
