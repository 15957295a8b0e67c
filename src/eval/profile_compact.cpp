// The agent's profile: a header line, one line per launch, the verdict. The agent reads it after
// every profile call, so it says in a few hundred characters what the full table says in a page.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kagent/profile/roofline.hpp"
#include "launch_rows.hpp"

namespace kagent::profile {

std::string render_compact(const Op& op, const std::vector<LaunchRow>& rows, const EvalReport* rep,
                           const std::string& no_timing_reason) {
  std::string out;
  if (rep && rep->outcome.candidate_time) {
    const auto& o = rep->outcome;
    out += fmt::format("{}: median {:.4f} ms over {} samples, tier {}", op.name, o.candidate_time->median_ms,
                       o.candidate_time->n, rep->reward.tier);
    const IdealTime it = ideal_time(op, *rep);
    if (it.compute_bound()) {
      out += fmt::format("; ideal {:.4f} ms ({} at the measured {} {:.1f} TFLOP/s; its bytes {:.4f} ms), {:.2f}x",
                         it.ms, flops_text(it.compute.flops), it.compute.roof.name, it.compute.roof.gflops / 1e3,
                         it.memory_ms, o.candidate_time->median_ms / it.ms);
    } else if (rep->peaks && o.bytes_moved > 0) {
      out += fmt::format("; ideal {:.4f} ms ({:.1f} MB at the measured {:.0f} GB/s), {:.2f}x", it.memory_ms,
                         o.bytes_moved / 1e6, profile::memory_roof(*rep->peaks).gbs,
                         o.candidate_time->median_ms / it.memory_ms);
      if (it.compute.floor_ms > 0)
        out += fmt::format(" (its FLOPs {:.4f} ms at {})", it.compute.floor_ms, it.compute.roof.name);
    } else if (!rep->peaks_note.empty()) {
      out += fmt::format("; no roofline ({})", rep->peaks_note);
    }
    out += "\n";
    if (!o.metrics_replay.empty()) out += fmt::format("counters: {}\n", o.metrics_replay);
  } else {
    out += fmt::format("{}: not timed\n", op.name);
  }
  for (const auto& r : rows) {
    if (!r.library.empty()) {
      out += fmt::format("#{} {} step: {}", r.index, r.library, r.kernel);
      if (r.time) {
        out += fmt::format(" | {:.4f} ms, {:.0f}%", r.time->median_ms, 100 * r.time->share);
        if (!r.time->library_kernels.empty())
          out += fmt::format(" | kernels: {}", fmt::join(r.time->library_kernels, ", "));
      }
      if (r.metrics) {
        const KernelMetrics& m = *r.metrics;
        out += fmt::format(" | DRAM {:.0f}% SM {:.0f}%", m.dram_pct, m.sm_pct);
        if (m.tensor_pct >= kTensorPctShown) out += fmt::format(" tensor {:.0f}%", m.tensor_pct);
        out += " | " + classify(m).kind;
      }
      out += "\n";
      continue;
    }
    out += fmt::format("#{} {} grid {} block {}, {} regs, {} B smem, occupancy {:.0f}%", r.index, r.kernel,
                       dims_text(r.grid), dims_text(r.block), r.regs, r.smem, 100 * r.occupancy.fraction);
    if (r.occupancy.fraction < 1) out += fmt::format(" (by {})", r.occupancy.limiter);
    if (r.metrics) out += fmt::format(", achieved {:.0f}%", r.metrics->occupancy_pct);
    if (r.time) out += fmt::format(" | {:.4f} ms, {:.0f}%", r.time->median_ms, 100 * r.time->share);
    if (r.metrics) {
      const KernelMetrics& m = *r.metrics;
      out += fmt::format(" | DRAM {:.0f}% SM {:.0f}% L2 hit {:.0f}% L1 hit {:.0f}%", m.dram_pct, m.sm_pct, m.l2_hit_pct,
                         m.l1_hit_pct);
      if (m.tensor_pct >= kTensorPctShown) out += fmt::format(" tensor {:.0f}%", m.tensor_pct);
      if (r.roof)
        out += fmt::format(" | {:.0f} GB/s, {:.0f} GFLOP/s FP32, {:.0f}% of the {} roof", r.roof->achieved_gbs,
                           r.roof->achieved_gflops, 100 * r.roof->roof_share, r.roof->roof);
      out += " | " + classify(m).kind;
    }
    out += "\n";
  }
  return out + "verdict: " + verdict(op, rows, rep, no_timing_reason) + "\n";
}

}  // namespace kagent::profile
