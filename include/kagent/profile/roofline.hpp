#pragma once
// A kernel on this GPU's roofline: its achieved DRAM bandwidth and FP32 throughput (from its
// counters) against the measured roofs (DevicePeaks), its arithmetic intensity against the ridge,
// and which roof bounds it. Also the operator's ideal time: the bytes it must move (each input
// read once, each output written once) at the memory roof.
#include <cstdint>
#include <string>

#include "kagent/protocol/protocol.hpp"

namespace kagent::profile {

struct RooflinePoint {
  double achieved_gbs = 0;     // DRAM bytes / duration
  double achieved_gflops = 0;  // FP32 FLOPs / duration
  double bandwidth_share = 0;  // of the memory roof (memory_roof)
  double compute_share = 0;    // of the measured FP32 matrix-product throughput
  double intensity = 0;        // FP32 FLOPs per DRAM byte (infinite when nothing reached DRAM)
  double ridge = 0;            // the intensity where the roofs meet
  std::string roof;            // "memory" (left of the ridge) or "compute"
  double roof_share = 0;       // achieved / what the roof above this intensity allows
};

// The memory roof: the highest bandwidth measured on this GPU, of the device-to-device memcpy and
// kagent's streaming read, write and copy kernels, and which of them reached it. A floor must be
// under what a kernel can reach, so it is the best of them, not the memcpy's alone. 0 without peaks.
struct MemoryRoof {
  double gbs = 0;
  std::string by;  // "streaming read", "streaming write", "streaming copy" or "device-to-device copy"
};
MemoryRoof memory_roof(const DevicePeaks& p);
// "3310 GB/s (streaming read; write 3190, copy 3080, device-to-device copy 2967 GB/s)".
std::string memory_roof_text(const DevicePeaks& p);

RooflinePoint roofline(const KernelMetrics& m, const DevicePeaks& p);

// Milliseconds to move `bytes` at the memory roof; 0 without peaks.
double ideal_ms(int64_t bytes, const DevicePeaks& p);

}  // namespace kagent::profile
