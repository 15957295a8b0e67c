#pragma once
// A kernel on this GPU's roofline: its achieved DRAM bandwidth and FP32 throughput (from its
// counters) against the measured roofs (DevicePeaks), its arithmetic intensity against the ridge,
// and which roof bounds it. Also the operator's ideal time: the bytes it must move (each input
// read once, each output written once) at the measured copy bandwidth.
#include <cstdint>
#include <string>

#include "kagent/protocol/protocol.hpp"

namespace kagent::profile {

struct RooflinePoint {
  double achieved_gbs = 0;     // DRAM bytes / duration
  double achieved_gflops = 0;  // FP32 FLOPs / duration
  double bandwidth_share = 0;  // of the measured copy bandwidth
  double compute_share = 0;    // of the measured FP32 matrix-product throughput
  double intensity = 0;        // FP32 FLOPs per DRAM byte (infinite when nothing reached DRAM)
  double ridge = 0;            // the intensity where the roofs meet
  std::string roof;            // "memory" (left of the ridge) or "compute"
  double roof_share = 0;       // achieved / what the roof above this intensity allows
};

RooflinePoint roofline(const KernelMetrics& m, const DevicePeaks& p);

// Milliseconds to move `bytes` at the measured copy bandwidth; 0 without peaks.
double ideal_ms(int64_t bytes, const DevicePeaks& p);

}  // namespace kagent::profile
