// A kernel against the measured roofs: achieved rates from its counters, which side of the ridge
// it lies on, how close it gets to the roof above it; and the operator's ideal time.
#include <gtest/gtest.h>

#include <cmath>

#include "kagent/profile/roofline.hpp"

using namespace kagent;
using namespace kagent::profile;

namespace {
DevicePeaks peaks() {
  DevicePeaks p;
  p.copy_gbs = 3000;      // 3 TB/s
  p.fp32_gflops = 48000;  // 48 TFLOP/s: the ridge is at 16 FLOP/byte
  return p;
}
KernelMetrics kernel(double ms, double bytes, double flops) {
  KernelMetrics m;
  m.kernel = "k";
  m.duration_ms = ms;
  m.dram_bytes = bytes;
  m.fp32_flops = flops;
  return m;
}
}  // namespace

TEST(Roofline, BandwidthBoundKernelSitsUnderTheMemoryRoof) {
  // 2.4 GB in 1 ms: 2400 GB/s, 80% of the copy bandwidth; one FLOP per 4 bytes.
  RooflinePoint r = roofline(kernel(1.0, 2.4e9, 0.6e9), peaks());
  EXPECT_NEAR(r.achieved_gbs, 2400, 1e-6);
  EXPECT_NEAR(r.achieved_gflops, 600, 1e-6);
  EXPECT_NEAR(r.bandwidth_share, 0.8, 1e-9);
  EXPECT_NEAR(r.compute_share, 600.0 / 48000, 1e-9);
  EXPECT_NEAR(r.intensity, 0.25, 1e-12);
  EXPECT_NEAR(r.ridge, 16, 1e-12);
  EXPECT_EQ(r.roof, "memory");
  EXPECT_NEAR(r.roof_share, 0.8, 1e-9);
}

TEST(Roofline, ComputeBoundKernelSitsUnderTheComputeRoof) {
  // 36 GFLOP in 1 ms: 36 TFLOP/s, 75% of the FP32 peak; 100 FLOP per byte, right of the ridge.
  RooflinePoint r = roofline(kernel(1.0, 0.36e9, 36e9), peaks());
  EXPECT_EQ(r.roof, "compute");
  EXPECT_NEAR(r.compute_share, 0.75, 1e-9);
  EXPECT_NEAR(r.roof_share, 0.75, 1e-9);
  EXPECT_NEAR(r.intensity, 100, 1e-9);
}

TEST(Roofline, KernelsThatMissDramOrDoNoFloatingPointWork) {
  // Everything served from L2: infinite intensity, the compute roof.
  RooflinePoint cached = roofline(kernel(0.5, 0, 1e9), peaks());
  EXPECT_TRUE(std::isinf(cached.intensity));
  EXPECT_EQ(cached.roof, "compute");
  // A copy does no FP32 work: intensity 0, the memory roof.
  RooflinePoint copy = roofline(kernel(1.0, 2.7e9, 0), peaks());
  EXPECT_EQ(copy.intensity, 0);
  EXPECT_EQ(copy.roof, "memory");
  EXPECT_NEAR(copy.roof_share, 0.9, 1e-9);
  // No duration (no counters): nothing achieved, nothing divided by zero.
  RooflinePoint none = roofline(kernel(0, 0, 0), peaks());
  EXPECT_EQ(none.achieved_gbs, 0);
  EXPECT_EQ(none.roof_share, 0);
}

TEST(Roofline, IdealTimeIsTheBytesAtTheCopyBandwidth) {
  EXPECT_NEAR(ideal_ms(int64_t(3e9), peaks()), 1.0, 1e-12);  // 3 GB at 3 TB/s
  EXPECT_NEAR(ideal_ms(int64_t(201326592), peaks()), 201326592 / 3e12 * 1e3, 1e-12);
  EXPECT_EQ(ideal_ms(1000, DevicePeaks{}), 0);  // without peaks, no ideal
}

// The memory roof is the best bandwidth measured, of the memcpy and the streaming kernels, named; a
// floor taken at it is under what any of them reached.
TEST(Roofline, TheMemoryRoofIsTheBestMeasuredBandwidth) {
  DevicePeaks p = peaks();
  EXPECT_EQ(memory_roof(p).gbs, 3000);
  EXPECT_EQ(memory_roof(p).by, "device-to-device copy");
  EXPECT_EQ(memory_roof_text(p), "3000 GB/s (device-to-device copy)");
  p.read_gbs = 3310;
  p.write_gbs = 3190;
  p.copy_kernel_gbs = 3080;
  EXPECT_EQ(memory_roof(p).gbs, 3310);
  EXPECT_EQ(memory_roof(p).by, "streaming read");
  EXPECT_EQ(memory_roof_text(p), "3310 GB/s (streaming read; write 3190, copy 3080, device-to-device copy 3000 GB/s)");
  EXPECT_NEAR(ideal_ms(int64_t(3310) * 1000 * 1000, p), 1.0, 1e-12);
  RooflinePoint r = roofline(kernel(1.0, 2.648e9, 0), p);
  EXPECT_NEAR(r.bandwidth_share, 0.8, 1e-9);
  p.copy_kernel_gbs = 3400;
  EXPECT_EQ(memory_roof_text(p), "3400 GB/s (streaming copy; read 3310, write 3190, device-to-device copy 3000 GB/s)");
}
