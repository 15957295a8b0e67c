#pragma once
// A reference's library calls as kagent's own plan steps, each timed alone (the "library_steps"
// request, runner_messages.hpp): the plan parsed by the plan parser and run by the plan executor, so
// the step timed is the one a candidate's plan gets, algorithm choice and workspace included.
#include <vector>

#include "device.hpp"
#include "harness.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent::runner {

// One LibraryStepTime per plan, in order. A plan that does not parse, that the library refuses or
// that runs out of memory is that entry's error; a sticky CUDA error is thrown (CudaError): the
// runner must restart.
std::vector<LibraryStepTime> time_library_steps(const Device& dev, Harness& h, const LibraryStepsRequest& rq);

}  // namespace kagent::runner
