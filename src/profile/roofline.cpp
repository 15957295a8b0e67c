#include "kagent/profile/roofline.hpp"

#include <limits>

namespace kagent::profile {

RooflinePoint roofline(const KernelMetrics& m, const DevicePeaks& p) {
  RooflinePoint r;
  const double s = m.duration_ms * 1e-3;
  if (s > 0) {
    r.achieved_gbs = m.dram_bytes / s / 1e9;
    r.achieved_gflops = m.fp32_flops / s / 1e9;
  }
  if (p.copy_gbs > 0) r.bandwidth_share = r.achieved_gbs / p.copy_gbs;
  if (p.fp32_gflops > 0) r.compute_share = r.achieved_gflops / p.fp32_gflops;
  if (p.copy_gbs > 0) r.ridge = p.fp32_gflops / p.copy_gbs;
  if (m.dram_bytes > 0)
    r.intensity = m.fp32_flops / m.dram_bytes;
  else
    r.intensity = m.fp32_flops > 0 ? std::numeric_limits<double>::infinity() : 0;
  // Left of the ridge the memory roof (intensity x bandwidth) is the lower one: the share of it
  // reached is the share of the bandwidth. Right of it, the share of the FP32 peak.
  if (r.intensity < r.ridge || p.fp32_gflops <= 0) {
    r.roof = "memory";
    r.roof_share = r.bandwidth_share;
  } else {
    r.roof = "compute";
    r.roof_share = r.compute_share;
  }
  return r;
}

double ideal_ms(int64_t bytes, const DevicePeaks& p) {
  return p.copy_gbs > 0 ? double(bytes) / (p.copy_gbs * 1e9) * 1e3 : 0;
}

}  // namespace kagent::profile
