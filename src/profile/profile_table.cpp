#include "kagent/profile/profile_table.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"
#include "kagent/compile/kernel_info.hpp"
#include "kagent/spec/expr.hpp"

namespace kagent::profile {

Occupancy occupancy(int64_t threads, int regs, int64_t smem) {
  constexpr int kMaxThreads = 2048, kMaxBlocks = 32, kRegs = 65536;
  constexpr int64_t kSmem = 228 * 1024, kReservedPerBlock = 1024;
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
  if (m.dram_pct >= kBusy && m.dram_pct >= m.sm_pct)
    return {"memory-bound", fmt::format("DRAM at {:.0f}% of its peak (SM {:.0f}%): move fewer bytes (fuse, reuse "
                                        "through shared memory or L2, narrower types)",
                                        m.dram_pct, m.sm_pct)};
  if (m.sm_pct >= kBusy)
    return {"compute-bound", fmt::format("SM at {:.0f}% of its peak (DRAM {:.0f}%): fewer or cheaper instructions "
                                         "(tensor cores, vector loads, less index math)",
                                         m.sm_pct, m.dram_pct)};
  return {"latency-bound",
          fmt::format("neither DRAM ({:.0f}%) nor SM ({:.0f}%) reaches {:.0f}% of peak; achieved occupancy {:.0f}%: {}",
                      m.dram_pct, m.sm_pct, kBusy, m.occupancy_pct,
                      m.occupancy_pct < 50 ? "more warps in flight (or more independent work per thread) would hide "
                                             "latency"
                                           : "warps wait on dependencies or memory; more independent work per thread, "
                                             "or less synchronization")};
}

ProfileOutput render_profile(const Op& op, const Candidate& c, const CompileResult& r, const EvalReport* rep,
                             const std::string& no_timing_reason) {
  ShapeLookup shapes = [&](std::string_view name) -> const std::vector<int64_t>* {
    for (const auto* list : {&op.inputs, &op.outputs})
      for (const auto& t : *list)
        if (t.name == name) return &t.shape;
    return nullptr;
  };
  ScalarLookup scalars = [&](std::string_view name) -> std::optional<ExprValue> {
    for (const auto& s : op.scalars)
      if (s.name == name) return s.value;
    return std::nullopt;
  };
  const std::vector<LaunchTime> none;
  const auto& times = rep ? rep->outcome.launch_times : none;
  TextTable t({"launch", "kernel", "grid", "block", "regs", "smem B", "blocks/SM", "occupancy", "limited by",
               "median ms", "CUPTI ms", "share"});
  nlohmann::json launches = nlohmann::json::array();
  for (size_t i = 0; i < c.plan.launches.size(); ++i) {
    const Launch& l = c.plan.launches[i];
    auto dims = [&](const std::vector<Expr>& es) {
      std::vector<int64_t> v;
      for (const auto& e : es) {
        try {
          v.push_back(e.eval_int(shapes, scalars));
        } catch (const ExprError&) {
          v.push_back(-1);  // depends on a scratch buffer's shape or is not known here
        }
      }
      return v;
    };
    auto grid = dims(l.grid), block = dims(l.block);
    int64_t threads = 1;
    for (int64_t b : block) threads *= std::max<int64_t>(b, 1);
    int64_t dyn = 0;
    try {
      dyn = l.smem.eval_int(shapes, scalars);
    } catch (const ExprError&) {
    }
    auto k =
        std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == l.kernel; });
    const int regs = k != r.kernels.end() ? k->registers : 0;
    const int64_t smem = (k != r.kernels.end() ? k->static_smem : 0) + dyn;
    Occupancy o = occupancy(threads, regs, smem);
    auto show = [](const std::vector<int64_t>& v) {
      std::string s;
      for (int64_t x : v) s += (s.empty() ? "" : "x") + (x < 0 ? std::string("?") : std::to_string(x));
      return s;
    };
    const bool timed = i < times.size();
    t.add_row({std::to_string(i), l.kernel, show(grid), show(block), std::to_string(regs), std::to_string(smem),
               std::to_string(o.blocks_per_sm), fmt::format("{:.0f}%", 100 * o.fraction), o.limiter,
               timed ? fmt::format("{:.4f}", times[i].median_ms) : "-",
               timed && times[i].cupti_ms >= 0 ? fmt::format("{:.4f}", times[i].cupti_ms) : "-",
               timed ? fmt::format("{:.0f}%", 100 * times[i].share) : "-"});
    launches.push_back({{"kernel", l.kernel},
                        {"grid", grid},
                        {"block", block},
                        {"registers", regs},
                        {"smem", smem},
                        {"blocks_per_sm", o.blocks_per_sm},
                        {"occupancy", o.fraction},
                        {"limited_by", o.limiter}});
    if (timed) launches.back()["median_ms"] = times[i].median_ms;
    if (timed && times[i].cupti_ms >= 0) launches.back()["cupti_ms"] = times[i].cupti_ms;
  }
  std::string text =
      "launches (theoretical occupancy on a 2048-thread, 64K-register, 228 KiB SM; each launch timed "
      "on its own after an L2 flush: median ms by events around it, CUPTI ms the kernel's own duration):\n" +
      t.render();
  nlohmann::json record = {{"launches", launches}};
  if (rep && rep->outcome.candidate_time) {
    const auto& o = rep->outcome;
    text += fmt::format(
        "\nwhole plan: median {:.4f} ms over {} samples; {} bytes of tensors moved: {:.0f} GB/s achieved, "
        "{:.1f}% of the {:.0f} GB/s peak; memory floor {:.4f} ms ({:.0f}% of the median). tier {}\n",
        o.candidate_time->median_ms, o.candidate_time->n, o.bytes_moved, o.achieved_gbs, 100 * o.bandwidth_share,
        o.device.peak_gbs, o.memory_floor_ms,
        o.candidate_time->median_ms > 0 ? 100 * o.memory_floor_ms / o.candidate_time->median_ms : 0.0,
        rep->reward.tier);
    record["median_ms"] = o.candidate_time->median_ms;
    record["achieved_gbs"] = o.achieved_gbs;
    record["bandwidth_share"] = o.bandwidth_share;
    record["tier"] = rep->reward.tier;
  } else if (!rep) {
    text += fmt::format("\nno timing: {}\n", no_timing_reason);
  } else {
    text += fmt::format("\nno timing: the candidate is not correct ({})\n", rep->outcome.message);
  }
  if (rep && !rep->outcome.metrics.empty()) {
    TextTable h(
        {"launch", "kernel", "duration ms", "DRAM %", "SM %", "occupancy %", "L2 hit %", "L1 hit %", "limiter"});
    nlohmann::json counters = nlohmann::json::array();
    std::string reasons;
    for (size_t i = 0; i < rep->outcome.metrics.size(); ++i) {
      const KernelMetrics& m = rep->outcome.metrics[i];
      const Limiter lim = classify(m);
      h.add_row({std::to_string(i), m.kernel, fmt::format("{:.4f}", m.duration_ms), fmt::format("{:.1f}", m.dram_pct),
                 fmt::format("{:.1f}", m.sm_pct), fmt::format("{:.1f}", m.occupancy_pct),
                 fmt::format("{:.1f}", m.l2_hit_pct), fmt::format("{:.1f}", m.l1_hit_pct), lim.kind});
      reasons += fmt::format("launch {} ({}): {}: {}\n", i, m.kernel, lim.kind, lim.reason);
      nlohmann::json mj = m;
      mj["limiter"] = lim.kind;
      mj["reason"] = lim.reason;
      counters.push_back(mj);
    }
    text += "\nhardware counters (CUPTI range profiler; each kernel replayed once per pass, after an L2 flush):\n" +
            h.render() + reasons;
    record["counters"] = counters;
  } else if (rep && !rep->outcome.metrics_note.empty()) {
    text += "\nhardware counters: not available (" + rep->outcome.metrics_note + "); the timing above stands\n";
    record["counters_note"] = rep->outcome.metrics_note;
  }
  return {text, record};
}

}  // namespace kagent::profile
