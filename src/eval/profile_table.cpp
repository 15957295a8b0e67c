#include "kagent/eval/profile_table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kagent/common/text_table.hpp"
#include "kagent/profile/roofline.hpp"
#include "launch_rows.hpp"

namespace kagent::profile {

Occupancy occupancy(int64_t threads, int regs, int64_t smem) {
  constexpr int kMaxThreads = 2048, kMaxBlocks = 32, kRegs = 65536;
  constexpr int64_t kSmem = 228 * 1024, kReservedPerBlock = 1024;
  // The figures come from a plan and a cubin: beyond what one SM holds, the answer is the same
  // (no block fits), so clamping keeps the arithmetic below in range without changing it.
  threads = std::clamp<int64_t>(threads, 0, 1 << 20);
  regs = std::clamp(regs, 0, 255);  // a thread has at most 255 registers
  smem = std::clamp<int64_t>(smem, 0, int64_t{1} << 40);
  const int warps = static_cast<int>((threads + 31) / 32);
  const int regs_per_warp = ((std::max(regs, 1) * 32 + 255) / 256) * 256;  // allocated per warp, 256 at a time
  struct Limit {
    int blocks;
    const char* why;
  };
  std::vector<Limit> limits = {
      {kMaxThreads / std::max<int>(warps * 32, 1), "threads"},
      {kMaxBlocks, "blocks per SM"},
      {kRegs / std::max(regs_per_warp * warps, 1), "registers"},
      {static_cast<int>(kSmem / std::max<int64_t>(smem + kReservedPerBlock, 1)), "shared memory"}};
  auto lim = *std::min_element(limits.begin(), limits.end(),
                               [](const Limit& a, const Limit& b) { return a.blocks < b.blocks; });
  Occupancy o;
  o.blocks_per_sm = std::max(lim.blocks, 0);
  o.fraction = std::min(1.0, static_cast<double>(o.blocks_per_sm * warps * 32) / kMaxThreads);
  o.limiter = lim.why;
  return o;
}

Limiter classify(const KernelMetrics& m) {
  constexpr double kBusy = 60.0;
  // The tensor pipe is compute too: sm__throughput leaves it out, so an MMA-bound kernel can show a
  // modest SM % with its tensor pipe busy most of the time.
  if (m.dram_pct >= kBusy && m.dram_pct >= m.sm_pct && m.dram_pct >= m.tensor_pct)
    return {"memory-bound", fmt::format("DRAM at {:.0f}% of its peak (SM {:.0f}%): move fewer bytes (fuse, reuse "
                                        "through shared memory or L2, narrower types)",
                                        m.dram_pct, m.sm_pct)};
  if (m.tensor_pct >= kBusy && m.tensor_pct >= m.sm_pct)
    return {"compute-bound", fmt::format("tensor pipe busy {:.0f}% of the time (SM {:.0f}%, DRAM {:.0f}%): the "
                                         "tensor cores are the limit; fewer MMAs per result (the cheapest split the "
                                         "precision allows), or more of the pipe's time spent issuing them (operands "
                                         "staged ahead, fewer stalls between MMAs)",
                                         m.tensor_pct, m.sm_pct, m.dram_pct)};
  if (m.sm_pct >= kBusy)
    return {"compute-bound", fmt::format("SM at {:.0f}% of its peak (DRAM {:.0f}%): fewer or cheaper instructions "
                                         "(tensor cores, vector loads, less index math)",
                                         m.sm_pct, m.dram_pct)};
  return {"latency-bound",
          fmt::format("neither DRAM ({:.0f}%) nor SM ({:.0f}%) nor the tensor pipe ({:.0f}%) reaches {:.0f}% of peak; "
                      "achieved occupancy {:.0f}%: {}",
                      m.dram_pct, m.sm_pct, m.tensor_pct, kBusy, m.occupancy_pct,
                      m.occupancy_pct < 50 ? "more warps in flight (or more independent work per thread) would hide "
                                             "latency"
                                           : "warps wait on dependencies or memory; more independent work per thread, "
                                             "or less synchronization")};
}

ProfileOutput render_profile(const Op& op, const Candidate& c, const CompileResult& r, const EvalReport* rep,
                             const std::string& no_timing_reason) {
  const std::vector<LaunchRow> rows = launch_rows(op, c, r, rep);
  TextTable t({"launch", "kernel", "grid", "block", "regs", "smem B", "blocks/SM", "occupancy", "limited by",
               "median ms", "CUPTI ms", "share"});
  nlohmann::json launches = nlohmann::json::array();
  std::string library_lines;  // which kernels each library step ran, under the table
  for (const LaunchRow& row : rows) {
    const LaunchTime* time = row.time;
    if (!row.library.empty()) {
      t.add_row({std::to_string(row.index), row.kernel, "-", "-", "-", "-", "-", "-", "-",
                 time ? fmt::format("{:.4f}", time->median_ms) : "-",
                 time && time->cupti_ms >= 0 ? fmt::format("{:.4f}", time->cupti_ms) : "-",
                 time ? fmt::format("{:.0f}%", 100 * time->share) : "-"});
      launches.push_back({{"kernel", row.kernel}, {"library", row.library}});
      if (time) {
        launches.back()["median_ms"] = time->median_ms;
        if (time->cupti_ms >= 0) launches.back()["cupti_ms"] = time->cupti_ms;
        launches.back()["library_kernels"] = time->library_kernels;
        if (!time->library_kernels.empty())
          library_lines += fmt::format("launch {} ({} step) ran: {}\n", row.index, row.library,
                                       fmt::join(time->library_kernels, ", "));
      }
      continue;
    }
    t.add_row({std::to_string(row.index), row.kernel, dims_text(row.grid), dims_text(row.block),
               std::to_string(row.regs), std::to_string(row.smem), std::to_string(row.occupancy.blocks_per_sm),
               fmt::format("{:.0f}%", 100 * row.occupancy.fraction), row.occupancy.limiter,
               time ? fmt::format("{:.4f}", time->median_ms) : "-",
               time && time->cupti_ms >= 0 ? fmt::format("{:.4f}", time->cupti_ms) : "-",
               time ? fmt::format("{:.0f}%", 100 * time->share) : "-"});
    launches.push_back({{"kernel", row.kernel},
                        {"grid", row.grid},
                        {"block", row.block},
                        {"registers", row.regs},
                        {"smem", row.smem},
                        {"blocks_per_sm", row.occupancy.blocks_per_sm},
                        {"occupancy", row.occupancy.fraction},
                        {"limited_by", row.occupancy.limiter}});
    if (time) launches.back()["median_ms"] = time->median_ms;
    if (time && time->cupti_ms >= 0) launches.back()["cupti_ms"] = time->cupti_ms;
  }
  std::string text =
      "launches (theoretical occupancy on a 2048-thread, 64K-register, 228 KiB SM; each launch timed "
      "on its own after an L2 flush: median ms by events around it, CUPTI ms the kernel's own duration):\n" +
      t.render();
  if (!library_lines.empty())
    text +=
        "library steps (their kernels as CUPTI named them; CUPTI ms is the time any of them ran):\n" + library_lines;
  nlohmann::json record = {{"launches", launches}};
  if (rep && rep->outcome.candidate_time) {
    const auto& o = rep->outcome;
    text += fmt::format(
        "\nwhole plan: median {:.4f} ms over {} samples; {} bytes of tensors moved: {:.0f} GB/s achieved, "
        "{:.1f}% of the {:.0f} GB/s theoretical peak; memory floor {:.4f} ms ({:.0f}% of the median). tier {}\n",
        o.candidate_time->median_ms, o.candidate_time->n, o.bytes_moved, o.achieved_gbs, 100 * o.bandwidth_share,
        o.device.peak_gbs, o.memory_floor_ms,
        o.candidate_time->median_ms > 0 ? 100 * o.memory_floor_ms / o.candidate_time->median_ms : 0.0,
        rep->reward.tier);
    record["median_ms"] = o.candidate_time->median_ms;
    record["achieved_gbs"] = o.achieved_gbs;
    record["bandwidth_share"] = o.bandwidth_share;
    record["tier"] = rep->reward.tier;
    const IdealTime it = ideal_time(op, *rep);
    if (rep->peaks && o.bytes_moved > 0) {
      const double mem = it.memory_ms;
      text += fmt::format(
          "memory floor at the measured memory bandwidth: {:.4f} ms (the operator's {} bytes of inputs "
          "and outputs at {})\n",
          mem, o.bytes_moved, profile::memory_roof_text(*rep->peaks));
      record["memory_floor_ms"] = mem;
    }
    if (it.compute.floor_ms > 0) {
      std::string others;
      for (size_t i = 1; i < it.compute.roofs.size(); ++i)
        others +=
            fmt::format("; {} {:.1f} TFLOP/s: {:.4f} ms", it.compute.roofs[i].name, it.compute.roofs[i].gflops / 1e3,
                        it.compute.flops / (it.compute.roofs[i].gflops * 1e9) * 1e3);
      text += fmt::format(
          "compute floor at the measured rates {} allows: {:.4f} ms (the operator's {}, {}, at {} "
          "{:.1f} TFLOP/s: {}{})\n",
          precision_name(op.precision), it.compute.floor_ms, flops_text(it.compute.flops), op.flops_source,
          it.compute.roof.name, it.compute.roof.gflops / 1e3, it.compute.roof.source, others);
      record["compute_floor_ms"] = it.compute.floor_ms;
      record["flops"] = it.compute.flops;
    } else if (!op.flops && !op.flops_source.empty()) {
      text += fmt::format("compute floor: not known ({})\n", op.flops_source);
    }
    if (it.ms > 0) {
      text += fmt::format("ideal time: {:.4f} ms (the larger floor: {}); the plan takes {:.2f}x that\n", it.ms,
                          it.compute_bound() ? "compute" : "memory", o.candidate_time->median_ms / it.ms);
      record["ideal_ms"] = it.ms;
    }
  } else if (!rep) {
    text += fmt::format("\nno timing: {}\n", no_timing_reason);
  } else {
    text += fmt::format("\nno timing: the candidate is not correct ({})\n", rep->outcome.message);
  }
  if (rep && !rep->outcome.metrics.empty()) {
    TextTable h({"launch", "kernel", "duration ms", "DRAM %", "SM %", "occupancy %", "L2 hit %", "L1 hit %", "tensor %",
                 "limiter"});
    nlohmann::json counters = nlohmann::json::array();
    std::string reasons;
    for (const LaunchRow& row : rows) {
      if (!row.metrics) continue;
      const KernelMetrics& m = *row.metrics;
      const Limiter lim = classify(m);
      h.add_row({std::to_string(row.index), m.kernel, fmt::format("{:.4f}", m.duration_ms),
                 fmt::format("{:.1f}", m.dram_pct), fmt::format("{:.1f}", m.sm_pct),
                 fmt::format("{:.1f}", m.occupancy_pct), fmt::format("{:.1f}", m.l2_hit_pct),
                 fmt::format("{:.1f}", m.l1_hit_pct), fmt::format("{:.1f}", m.tensor_pct), lim.kind});
      reasons += fmt::format("launch {} ({}): {}: {}\n", row.index, m.kernel, lim.kind, lim.reason);
      nlohmann::json mj = m;
      mj["limiter"] = lim.kind;
      mj["reason"] = lim.reason;
      if (row.roof)
        mj["roofline"] = {{"achieved_gbs", row.roof->achieved_gbs},
                          {"achieved_gflops", row.roof->achieved_gflops},
                          {"bandwidth_share", row.roof->bandwidth_share},
                          {"compute_share", row.roof->compute_share},
                          {"intensity", std::isfinite(row.roof->intensity) ? nlohmann::json(row.roof->intensity)
                                                                           : nlohmann::json(nullptr)},
                          {"ridge", row.roof->ridge},
                          {"roof", row.roof->roof},
                          {"roof_share", row.roof->roof_share}};
      counters.push_back(mj);
    }
    text += "\nhardware counters (CUPTI range profiler; each kernel replayed once per pass, after an L2 flush" +
            (rep->outcome.metrics_replay.empty() ? std::string() : "; " + rep->outcome.metrics_replay) + "):\n" +
            h.render() + reasons;
    record["counters"] = counters;
    if (!rep->outcome.metrics_replay.empty()) record["counters_replay"] = rep->outcome.metrics_replay;
  } else if (rep && !rep->outcome.metrics_note.empty()) {
    text += "\nhardware counters: not available (" + rep->outcome.metrics_note + "); the timing above stands\n";
    record["counters_note"] = rep->outcome.metrics_note;
  }
  if (rep && rep->peaks) {
    const DevicePeaks& p = *rep->peaks;
    if (std::any_of(rows.begin(), rows.end(), [](const LaunchRow& row) { return row.roof.has_value(); })) {
      TextTable f(
          {"launch", "kernel", "DRAM GB/s", "of copy", "FP32 GFLOP/s", "of FP32", "FLOP/byte", "roof", "of roof"});
      for (const LaunchRow& row : rows) {
        if (!row.roof) continue;
        const RooflinePoint& q = *row.roof;
        f.add_row({std::to_string(row.index), row.kernel, fmt::format("{:.0f}", q.achieved_gbs),
                   fmt::format("{:.0f}%", 100 * q.bandwidth_share), fmt::format("{:.0f}", q.achieved_gflops),
                   fmt::format("{:.0f}%", 100 * q.compute_share),
                   std::isfinite(q.intensity) ? fmt::format("{:.2f}", q.intensity) : "inf", q.roof,
                   fmt::format("{:.0f}%", 100 * q.roof_share)});
      }
      text += fmt::format(
          "\nroofline (roofs measured on this GPU{}: {} over {} MiB, {:.0f} GFLOP/s FP32 "
          "matrix product {}^3 by {} (theoretical {:.0f} GB/s, {:.0f} GFLOP/s); ridge {:.1f} FLOP/byte; FP32 FLOPs "
          "count the CUDA cores' FFMA x2, FADD, FMUL, not tensor-core work):\n",
          p.cached ? fmt::format(", {}, cached", p.measured_at) : std::string(), profile::memory_roof_text(p),
          p.copy_bytes >> 20, p.fp32_gflops, p.gemm_n, p.gemm_by.empty() ? "?" : p.gemm_by, p.theoretical_gbs,
          p.theoretical_gflops, profile::memory_roof(p).gbs > 0 ? p.fp32_gflops / profile::memory_roof(p).gbs : 0.0);
      if (p.tf32_mma_gflops > 0)
        text += fmt::format(
            "tensor-core rates measured on this GPU (mma.sync from registers): TF32 m16n8k8 {:.0f} GFLOP/s (3xTF32: "
            "{:.0f}, a third), FP16 {:.0f}, BF16 {:.0f} GFLOP/s; a launch's tensor % is its share of that pipe's "
            "time\n",
            p.tf32_mma_gflops, p.tf32_mma_gflops / 3, p.f16_mma_gflops, p.bf16_mma_gflops);
      text += f.render();
    }
    record["peaks"] = p;
  } else if (rep && !rep->peaks_note.empty()) {
    text += "\nroofline: not available (" + rep->peaks_note + ")\n";
    record["peaks_note"] = rep->peaks_note;
  }
  const std::string v = verdict(op, rows, rep, no_timing_reason);
  text += "\nverdict: " + v + "\n";
  record["verdict"] = v;
  return {text, render_compact(op, rows, rep, no_timing_reason), record};
}

}  // namespace kagent::profile
