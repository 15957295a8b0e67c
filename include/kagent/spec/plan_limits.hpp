#pragma once
// A launch plan evaluated against the operator's shapes and the architecture's launch limits
// before anything runs: a plan that divides by zero, overflows 64-bit integers, asks for a grid
// of 10^11 blocks, a block of 4096 threads or more dynamic shared memory than the architecture
// has is bad input (exit 2) naming the launch and the key, not a failure found on the GPU.
// The runner applies the same limits at launch time (and the device's own figures).
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "kagent/spec/candidate.hpp"
#include "kagent/spec/device_constants.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

struct LaunchLimits {
  std::array<int64_t, 3> grid = {2147483647, 65535, 65535};
  std::array<int64_t, 3> block = {1024, 1024, 64};
  int64_t threads_per_block = 1024;
  int64_t dynamic_smem = 232448;  // bytes a block may opt in to (227 KiB on sm_90)
  DeviceConstants device;         // what num_sms reads in these checks (nominal without a GPU)
};

// The limits of an architecture given by its number (90 for sm_90a); an unknown one gets the
// largest shared memory of the known ones, so that nothing valid is refused.
LaunchLimits launch_limits(int sm);

// Why a scalar argument's value cannot be passed as its type ("does not fit i32", "is not an
// integer"); nullopt when it can.
std::optional<std::string> scalar_value_problem(ScalarType type, const ExprValue& v);

// Checks the plan's names (check_plan_tensors), then evaluates every scratch shape, grid, block,
// smem and scalar argument with the operator's shapes and scalar values. Needs the operator's
// signature (op.signature_known()). Throws InputError "<file>:<line>: plan key launch[i].grid[0]:
// ..." naming the expression and what is wrong.
void check_plan_limits(const Candidate& cand, const Op& op, const LaunchLimits& limits);

// Without the operator's signature (`kagent compile` without --op): every grid, block and smem
// value that reads no tensor or scalar of the operator (literals, num_sms) against the limits,
// so 274080 bytes of shared memory on sm_90a is bad input before any GPU. Returns how many of
// those values it could not check (they read the operator's shapes).
int check_plan_constant_limits(const Candidate& cand, const LaunchLimits& limits);

// Only the library steps (gemm, conv) resolved against the operator's shapes, as the runner will:
// what every evaluation checks before the GPU (Compiler's compile_checked). Needs the signature.
void check_plan_library_steps(const Candidate& cand, const Op& op);

}  // namespace kagent
