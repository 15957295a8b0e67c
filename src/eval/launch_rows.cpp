#include "launch_rows.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/common/saturate.hpp"
#include "kagent/compile/kernel_info.hpp"
#include "kagent/spec/device_constants.hpp"
#include "kagent/spec/expr.hpp"
#include "kagent/spec/library_step.hpp"

namespace kagent::profile {

std::vector<LaunchRow> launch_rows(const Op& op, const Candidate& c, const CompileResult& r, const EvalReport* rep) {
  ShapeLookup shapes = [&](std::string_view name) -> const std::vector<int64_t>* {
    for (const auto* list : {&op.inputs, &op.outputs})
      for (const auto& t : *list)
        if (t.name == name) return &t.shape;
    return nullptr;
  };
  // num_sms is the evaluated device's; without an evaluation a dimension that reads it is unknown.
  const int sms = rep ? rep->outcome.device.sms : 0;
  ScalarLookup scalars = [&](std::string_view name) -> std::optional<ExprValue> {
    for (const auto& s : op.scalars)
      if (s.name == name) return s.value;
    if (sms > 0) return device_constant(name, DeviceConstants{sms});
    return std::nullopt;
  };
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
  std::vector<LaunchRow> rows;
  for (size_t i = 0; i < c.plan.launches.size(); ++i) {
    const Launch& l = c.plan.launches[i];
    LaunchRow row;
    row.index = i;
    row.kernel = l.kernel;
    if (rep && i < rep->outcome.launch_times.size()) row.time = &rep->outcome.launch_times[i];
    if (l.kind != StepKind::kernel) {
      // A library step: the library picks its kernels; the runner's description names the step.
      row.library = std::string(step_kind_name(l.kind));
      row.kernel = row.time && !row.time->kernel.empty() ? row.time->kernel : fmt::format("{} step", row.library);
      // Its counters are the sums (and time-weighted shares) over the kernels it ran (measure_counters.cpp).
      if (rep && i < rep->outcome.metrics.size()) {
        row.metrics = &rep->outcome.metrics[i];
        if (rep->peaks) row.roof = roofline(*row.metrics, *rep->peaks);
      }
      rows.push_back(std::move(row));
      continue;
    }
    row.grid = dims(l.grid);
    row.block = dims(l.block);
    int64_t threads = 1;
    // Saturating: the plan's figures are the candidate's (a block of 2^40 threads is wrong, not UB).
    for (int64_t b : row.block) threads = saturating_mul(threads, std::max<int64_t>(b, 1));
    int64_t dyn = 0;
    try {
      dyn = l.smem.eval_int(shapes, scalars);
    } catch (const ExprError&) {
    }
    auto k =
        std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == l.kernel; });
    row.regs = k != r.kernels.end() ? k->registers : 0;
    row.smem = saturating_add(k != r.kernels.end() ? k->static_smem : 0, dyn);
    row.occupancy = occupancy(threads, row.regs, row.smem);
    if (rep && i < rep->outcome.metrics.size()) {
      row.metrics = &rep->outcome.metrics[i];
      if (rep->peaks) row.roof = roofline(*row.metrics, *rep->peaks);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    // Appended piece by piece: `"x" + std::to_string(x)` trips GCC 12's -Wrestrict at -O3 (a false
    // positive inside libstdc++'s operator+, which broke Release builds with -Werror).
    if (!s.empty()) s += 'x';
    s += x < 0 ? std::string("?") : std::to_string(x);
  }
  return s;
}

namespace {

// A launch's time as the dominant launch and the shares are judged: the counters' duration when
// every launch has counters, else the events' median; -1 when neither is known.
bool all_counted(const std::vector<LaunchRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const LaunchRow& r) { return r.metrics; });
}
double launch_ms(const LaunchRow& r, bool by_counters) {
  return by_counters ? r.metrics->duration_ms : r.time ? r.time->median_ms : -1;
}

// The share of the plan's time a launch takes, by the same measure.
double time_share(const std::vector<LaunchRow>& rows, size_t i) {
  const bool counted = all_counted(rows);
  double total = 0;
  for (const auto& r : rows) total += std::max(0.0, launch_ms(r, counted));
  return total > 0 ? std::max(0.0, launch_ms(rows[i], counted)) / total : 0;
}

}  // namespace

std::optional<size_t> dominant_launch(const std::vector<LaunchRow>& rows) {
  const bool counted = all_counted(rows);
  std::optional<size_t> best;
  double best_ms = -1;
  for (const auto& r : rows)
    if (double ms = launch_ms(r, counted); ms > best_ms) best_ms = ms, best = r.index;
  return best_ms >= 0 ? best : std::nullopt;
}

IdealTime ideal_time(const Op& op, const EvalReport& rep) {
  IdealTime t;
  if (!rep.peaks) return t;
  if (rep.outcome.bytes_moved > 0) t.memory_ms = ideal_ms(rep.outcome.bytes_moved, *rep.peaks);
  if (op.flops) t.compute = compute_floor(*op.flops, *rep.peaks, op.precision);
  t.ms = std::max(t.memory_ms, t.compute.floor_ms);
  return t;
}

std::string verdict(const Op& op, const std::vector<LaunchRow>& rows, const EvalReport* rep,
                    const std::string& no_timing_reason) {
  if (!rep) return fmt::format("no timing ({}): only the static figures above", no_timing_reason);
  if (!rep->outcome.correct) return fmt::format("not correct ({}): fix that before speed", rep->outcome.message);
  std::string v;
  if (auto d = dominant_launch(rows)) {
    const LaunchRow& r = rows[*d];
    const std::string where = rows.size() > 1 ? fmt::format("launch {} ({}, {:.0f}% of the time)", r.index, r.kernel,
                                                            100 * time_share(rows, *d))
                                              : fmt::format("{}", r.kernel);
    if (r.metrics) {
      const Limiter lim = classify(*r.metrics);
      v = fmt::format("{} is {}: {}", where, lim.kind, lim.reason);
      if (r.metrics->tensor_pct >= kTensorPctShown)
        v += fmt::format(" (tensor cores busy {:.0f}% of the time; their work is not in the FP32 FLOP/s)",
                         r.metrics->tensor_pct);
      if (r.roof) v += fmt::format("; at {:.0f}% of the {} roof", 100 * r.roof->roof_share, r.roof->roof);
    } else {
      v = fmt::format("{} takes most of the time; no counters ({})", where,
                      rep->outcome.metrics_note.empty() ? "not collected" : rep->outcome.metrics_note);
    }
  }
  const auto& o = rep->outcome;
  const IdealTime it = ideal_time(op, *rep);
  if (it.compute_bound() && o.candidate_time) {
    // The operator's FLOPs bound it harder than its bytes: the ideal time is the compute floor.
    const ComputeRoof& roof = it.compute.roof;
    v += fmt::format(
        ". The plan takes {:.2f}x the ideal time of its FLOPs ({:.4f} ms: {} at the {:.1f} TFLOP/s {} rate, {}; "
        "its bytes alone {:.4f} ms)",
        o.candidate_time->median_ms / it.ms, it.ms, flops_text(it.compute.flops), roof.gflops / 1e3, roof.name,
        roof.source, it.memory_ms);
  } else if (rep->peaks && o.candidate_time && o.bytes_moved > 0) {
    const double ideal = it.memory_ms;
    const double ratio = ideal > 0 ? o.candidate_time->median_ms / ideal : 0;
    double flops = 0;  // the plan's FP32 work: its time at the FP32 peak is a floor of its own
    for (const auto& r : rows) flops += r.metrics ? r.metrics->fp32_flops : 0;
    const double compute_floor = rep->peaks->fp32_gflops > 0 ? flops / (rep->peaks->fp32_gflops * 1e9) * 1e3 : 0;
    if (ratio > 0 && ratio < 1.15)
      v += fmt::format(
          ". The plan runs at {:.2f}x the ideal time of its bytes: only moving fewer bytes makes it faster", ratio);
    else if (ratio > 0)
      v +=
          fmt::format(". The plan takes {:.2f}x the ideal time of its bytes ({:.4f} ms at the measured copy bandwidth)",
                      ratio, ideal);
    if (compute_floor > ideal)
      v += fmt::format("; its FP32 work alone takes {:.4f} ms at the measured FP32 peak", compute_floor);
  }
  return v.empty() ? "no launches" : v;
}

}  // namespace kagent::profile
