#pragma once
// What the full and the compact profile both show about each launch of a plan, gathered once:
// its shape and resources (from the plan and the compiled kernels), its time (events, CUPTI), its
// counters and where they put it on the roofline. Internal to src/eval.
#include <optional>
#include <string>
#include <vector>

#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/profile_table.hpp"
#include "kagent/profile/compute_floor.hpp"
#include "kagent/profile/roofline.hpp"

namespace kagent::profile {

// Tensor-pipe activity below this is not mentioned: on the H100 the counter reads about 5% for a
// softmax with no tensor-core instruction in it.
constexpr double kTensorPctShown = 20;

struct LaunchRow {
  size_t index = 0;
  std::string kernel;                // a library step: what the runner says it runs ("cuDNN conv2d f32 ...")
  std::string library;               // "gemm" or "conv" for a library step (no grid, block, registers), else empty
  std::vector<int64_t> grid, block;  // -1 where an extent is not known here
  int regs = 0;
  int64_t smem = 0;  // static + dynamic, bytes
  Occupancy occupancy;
  const LaunchTime* time = nullptr;        // with the per-launch timing
  const KernelMetrics* metrics = nullptr;  // with counters
  std::optional<RooflinePoint> roof;       // with counters and peaks
};

std::vector<LaunchRow> launch_rows(const Op& op, const Candidate& c, const CompileResult& r, const EvalReport* rep);

// The plan's ideal time: the larger of its memory floor (the operator's bytes at the measured copy
// bandwidth) and its compute floor (the operator's FLOPs at the fastest measured rate its precision
// allows, compute_floor.hpp). Zero fields where a figure is missing.
struct IdealTime {
  double ms = 0;         // max(memory_ms, compute.floor_ms)
  double memory_ms = 0;  // 0 without peaks or bytes
  ComputeFloor compute;  // floor_ms 0 without FLOPs or rates
  bool compute_bound() const { return compute.floor_ms > memory_ms; }
};
IdealTime ideal_time(const Op& op, const EvalReport& rep);

// "65536x1x1" with "?" for unknown extents.
std::string dims_text(const std::vector<int64_t>& v);

// The launch that takes most of the plan's time (by counters, else by events); nullopt without either.
std::optional<size_t> dominant_launch(const std::vector<LaunchRow>& rows);

// One paragraph: what bounds the plan and what would help, from its dominant launch's counters,
// and how far the plan is from its ideal time.
std::string verdict(const Op& op, const std::vector<LaunchRow>& rows, const EvalReport* rep,
                    const std::string& no_timing_reason);

// The agent's form: a header line, one line per launch, the verdict.
std::string render_compact(const Op& op, const std::vector<LaunchRow>& rows, const EvalReport* rep,
                           const std::string& no_timing_reason);

}  // namespace kagent::profile
