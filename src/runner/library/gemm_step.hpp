#pragma once
// GEMM steps through cuBLASLt: row-major D = act(alpha op(A) op(B) + beta C + bias) computed as the
// column-major product D^T = op(B)^T op(A)^T on the same buffers (no copies), bias and activation
// as cuBLASLt epilogues, the algorithm from cuBLASLt's heuristic for these exact pointers.
#include <memory>
#include <string>

#include "kagent/spec/library_step.hpp"
#include "library_step_runner.hpp"

namespace kagent::runner {

struct GemmPointers {
  CUdeviceptr a = 0, b = 0, c = 0, d = 0, bias = 0;
};

// Throws PlanError when cuBLASLt is missing or has no algorithm for the product as asked.
std::unique_ptr<LibraryStepRunner> make_gemm_runner(const GemmStep& g, const GemmShape& s, const GemmPointers& p,
                                                    const std::string& where);

}  // namespace kagent::runner
