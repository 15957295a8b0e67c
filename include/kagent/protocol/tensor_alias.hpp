#pragma once
// Whether a ModelNew solution's output shares memory with one of its inputs. The reference
// returns new tensors; a solution that writes its result into its input and returns that input
// changes what the caller passed it, and where the result equals the input (ReLU of inputs drawn
// from torch.rand, which are all non-negative) no comparison of values can see the write. The
// IPC references say where each tensor lives (allocation handle, byte range), so the aliasing
// itself is checked.
#include <optional>
#include <string>
#include <vector>

#include "kagent/protocol/protocol.hpp"

namespace kagent {

// Two tensors overlap when they are in the same allocation (same IPC handle) and their byte
// ranges intersect. Empty tensors overlap nothing.
bool tensors_overlap(const IpcTensorRef& a, const IpcTensorRef& b);

// The first output of `solution` (named in `outputs`) that overlaps an input (named in `inputs`),
// as a message for the failure, unless the reference's own output overlaps that input too (a
// reference that returns its input, or a view of it). nullopt when no output aliases an input.
std::optional<std::string> aliased_output(const std::vector<IpcTensorRef>& solution,
                                          const std::vector<IpcTensorRef>& reference,
                                          const std::vector<std::string>& outputs,
                                          const std::vector<std::string>& inputs);

}  // namespace kagent
