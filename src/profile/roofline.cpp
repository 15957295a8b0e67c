#include "kagent/profile/roofline.hpp"

#include <array>
#include <limits>

#include <fmt/format.h>

namespace kagent::profile {

namespace {

// The bandwidths measured on a GPU, each with its name as the roof says it and as the list says it.
struct Bandwidth {
  double gbs;
  const char* by;
  const char* short_name;
};
std::array<Bandwidth, 4> bandwidths(const DevicePeaks& p) {
  return {{{p.copy_gbs, "device-to-device copy", "device-to-device copy"},
           {p.read_gbs, "streaming read", "read"},
           {p.write_gbs, "streaming write", "write"},
           {p.copy_kernel_gbs, "streaming copy", "copy"}}};
}

}  // namespace

MemoryRoof memory_roof(const DevicePeaks& p) {
  MemoryRoof r;
  for (const Bandwidth& b : bandwidths(p))  // the memcpy first: it stays the roof on a tie
    if (b.gbs > r.gbs) r = {b.gbs, b.by};
  if (r.by.empty()) r.by = "device-to-device copy";
  return r;
}

std::string memory_roof_text(const DevicePeaks& p) {
  const MemoryRoof roof = memory_roof(p);
  std::string others;
  // The streaming kernels first, then the memcpy, as the roof's line has always listed them.
  const std::array<Bandwidth, 4> all = bandwidths(p);
  for (const Bandwidth* b : {&all[1], &all[2], &all[3], &all[0]})
    if (b->gbs > 0 && roof.by != b->by)
      others += fmt::format("{}{} {:.0f}", others.empty() ? "" : ", ", b->short_name, b->gbs);
  return fmt::format("{:.0f} GB/s ({}{})", roof.gbs, roof.by, others.empty() ? "" : "; " + others + " GB/s");
}

RooflinePoint roofline(const KernelMetrics& m, const DevicePeaks& p) {
  RooflinePoint r;
  const double s = m.duration_ms * 1e-3;
  if (s > 0) {
    r.achieved_gbs = m.dram_bytes / s / 1e9;
    r.achieved_gflops = m.fp32_flops / s / 1e9;
  }
  const double bw = memory_roof(p).gbs;
  if (bw > 0) r.bandwidth_share = r.achieved_gbs / bw;
  if (p.fp32_gflops > 0) r.compute_share = r.achieved_gflops / p.fp32_gflops;
  if (bw > 0) r.ridge = p.fp32_gflops / bw;
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
  const double bw = memory_roof(p).gbs;
  return bw > 0 ? double(bytes) / (bw * 1e9) * 1e3 : 0;
}

}  // namespace kagent::profile
