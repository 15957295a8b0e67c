#pragma once
// The profile of a candidate as `kagent profile` and the agent's profile tool print it: per launch
// of its plan the grid, block, registers, shared memory, theoretical occupancy and what limits it,
// the launch's own time (events around it, and CUPTI's kernel duration), its hardware counters
// with the limiter, and its place on the roofline of this GPU's measured peaks; for the whole plan
// the median, the achieved bandwidth, the ideal time of its bytes, and a verdict. The agent gets the
// compact form of the same figures.
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/compile/compiler.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::profile {

// Theoretical occupancy on Hopper-class SMs from a launch's block, registers and shared memory.
struct Occupancy {
  int blocks_per_sm = 0;
  double fraction = 0;
  std::string limiter;
};
Occupancy occupancy(int64_t threads, int regs, int64_t smem);

// What bounds a kernel, from its counters: "memory-bound" (DRAM at 60% or more of its peak and
// above the SM's share), "compute-bound" (the SM at 60% or more), else "latency-bound"; the
// reason is one line with the numbers.
struct Limiter {
  std::string kind;
  std::string reason;
};
Limiter classify(const KernelMetrics& m);

struct ProfileOutput {
  std::string text;     // the full tables (kagent profile)
  std::string compact;  // a header line, one line per launch, the verdict (the agent's profile tool)
  nlohmann::json record;
};

// `op` with its signature known (for a PyTorch reference, as the reference server reports it);
// `r` the candidate compiled; `rep` its evaluation with per-launch times, or null when it could not
// be timed (`no_timing_reason` says why).
ProfileOutput render_profile(const Op& op, const Candidate& c, const CompileResult& r, const EvalReport* rep,
                             const std::string& no_timing_reason);

}  // namespace kagent::profile
