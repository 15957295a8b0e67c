#include "kagent/profile/compute_floor.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/profile/roofline.hpp"

namespace kagent::profile {

namespace {

std::string sgemm_source(const DevicePeaks& p) {
  return fmt::format("{} FP32 matrix product {}^3, measured", p.gemm_by.empty() ? "an" : p.gemm_by, p.gemm_n);
}

}  // namespace

std::vector<ComputeRoof> compute_roofs(const DevicePeaks& p, Precision precision) {
  std::vector<ComputeRoof> r;
  if (p.fp32_gflops > 0) r.push_back({"FP32 FFMA", p.fp32_gflops, sgemm_source(p)});
  switch (precision) {
    case Precision::fp32:
      // Plain TF32 is not fp32-accurate; three TF32 products per fp32 one are (3xTF32).
      if (p.tf32_mma_gflops > 0)
        r.push_back({"3xTF32 mma.sync", p.tf32_mma_gflops / 3,
                     "a third of the TF32 mma.sync m16n8k8 rate measured from registers"});
      break;
    case Precision::tf32:
      if (p.tf32_mma_gflops > 0)
        r.push_back({"TF32 mma.sync", p.tf32_mma_gflops, "mma.sync m16n8k8 from registers, measured"});
      break;
    case Precision::fp16:
      if (p.f16_mma_gflops > 0)
        r.push_back({"FP16 mma.sync", p.f16_mma_gflops, "mma.sync m16n8k16 from registers, measured"});
      break;
    case Precision::bf16:
      if (p.bf16_mma_gflops > 0)
        r.push_back({"BF16 mma.sync", p.bf16_mma_gflops, "mma.sync m16n8k16 from registers, measured"});
      break;
  }
  std::stable_sort(r.begin(), r.end(), [](const ComputeRoof& a, const ComputeRoof& b) { return a.gflops > b.gflops; });
  return r;
}

ComputeFloor compute_floor(double flops, const DevicePeaks& p, Precision precision) {
  ComputeFloor f;
  f.flops = flops;
  f.roofs = compute_roofs(p, precision);
  if (flops > 0 && !f.roofs.empty()) {
    f.roof = f.roofs.front();
    f.floor_ms = flops / (f.roof.gflops * 1e9) * 1e3;
  }
  return f;
}

std::string flops_text(double flops) {
  if (flops >= 1e12) return fmt::format("{:.3g} TFLOP", flops / 1e12);
  if (flops >= 1e9) return fmt::format("{:.3g} GFLOP", flops / 1e9);
  if (flops >= 1e6) return fmt::format("{:.3g} MFLOP", flops / 1e6);
  return fmt::format("{:.0f} FLOP", flops);
}

std::string measured_roofs_text(const DevicePeaks& p) {
  std::string s =
      fmt::format("Measured on this GPU by kagent{}: memory bandwidth {} over {} MiB; FP32 {:.1f} TFLOP/s ({})",
                  p.measured_at.empty() ? "" : fmt::format(" ({})", p.measured_at), memory_roof_text(p),
                  p.copy_bytes >> 20, p.fp32_gflops / 1e3, sgemm_source(p));
  if (p.tf32_mma_gflops > 0)
    s += fmt::format(
        "; tensor cores, mma.sync issued from registers by every SM (the instruction's own rate: a kernel that "
        "feeds it from shared memory gets less): TF32 m16n8k8 {:.0f} TFLOP/s, so 3xTF32 (fp32-accurate) at most "
        "{:.0f} TFLOP/s (a third, derived); FP16 m16n8k16 {:.0f} TFLOP/s; BF16 m16n8k16 {:.0f} TFLOP/s",
        p.tf32_mma_gflops / 1e3, p.tf32_mma_gflops / 3e3, p.f16_mma_gflops / 1e3, p.bf16_mma_gflops / 1e3);
  else if (!p.mma_note.empty())
    s += fmt::format("; tensor-core rates not measured ({})", p.mma_note);
  // FP64, for an operator whose reference is ill-conditioned (its own error against fp64 far above
  // fp32's rounding): accumulating in fp64 is the way to stay near the truth, at these rates.
  if (p.fp64_gflops > 0 || p.f64_mma_gflops > 0)
    s += fmt::format(
        "; FP64 (for accumulation where an operator is ill-conditioned): DFMA {:.1f} TFLOP/s, mma.sync "
        "m8n8k4 .f64 on the tensor cores {:.1f} TFLOP/s",
        p.fp64_gflops / 1e3, p.f64_mma_gflops / 1e3);
  return s + ".";
}

}  // namespace kagent::profile
