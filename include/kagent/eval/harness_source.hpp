#pragma once
#include "kagent/spec/candidate.hpp"

namespace kagent {

// kagent's own device kernels (src/runner/harness_kernels.cu: input generation and output
// comparison) as a plan-less candidate, so the Compiler (and its cache) builds them.
Candidate harness_kernels();

}  // namespace kagent
