#pragma once
// The runner's "compare" request (compare_request.cpp).
#include "device.hpp"
#include "harness.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent::runner {

// The solution's tensors against the server's: EvalOutcome with correct, errors, flags of the
// first check, and on failure the stage ("inputs" or "correctness"), mismatch and message. Throws
// CudaError (an IPC handle that does not open) or std::runtime_error (a tensor not sent).
EvalOutcome compare_solution(const Device& dev, Harness& h, const CompareRequest& rq);

}  // namespace kagent::runner
