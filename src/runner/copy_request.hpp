#pragma once
// The runner's "copy" request (runner_messages.hpp, CopyRequest): tensors of one process copied
// into tensors of another, both opened here by CUDA IPC.
#include "device.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent::runner {

// Throws CudaError (a handle that does not open, a failed copy) or PlanError (a name missing in
// `to`, sizes that differ).
void copy_tensors(const Device& dev, const CopyRequest& rq);

}  // namespace kagent::runner
