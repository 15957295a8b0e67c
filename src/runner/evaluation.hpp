#pragma once
// One evaluate request, end to end on the GPU (MEASUREMENT.md): fresh seeded inputs per trial,
// the reference plan on them, inputs restored from pristine copies and outputs poisoned before
// the candidate runs, comparison with tolerance and NaN parity, the degenerate-reference flag,
// then timing (L2 reset and flush queued before the start event, warm-up, stopping rule) with
// the outputs re-checked during and after timing.
#include "harness.hpp"
#include "kagent/eval/protocol.hpp"

namespace kagent::runner {

struct EvaluationResult {
  EvalOutcome outcome;
  bool restart = false;  // a sticky CUDA error: the context is unusable, the runner must exit
};

EvaluationResult evaluate(const Device& dev, Harness& harness, const EvalRequest& rq);

}  // namespace kagent::runner
