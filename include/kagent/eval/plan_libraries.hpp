#pragma once
// A plan's library steps need cuBLASLt (gemm) and cuDNN (conv). kagent loads them itself before it
// sends the plan to the runner, so a machine without them is an environment error (exit 3) that
// names the library and where it was looked for, not a candidate's failure.
#include "kagent/spec/candidate.hpp"

namespace kagent {

// Throws EnvError when a library the plan's steps use cannot be loaded.
void require_plan_libraries(const Candidate& cand);

}  // namespace kagent
