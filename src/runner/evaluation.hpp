#pragma once
// One evaluate request, end to end on the GPU (docs/measurement.md): fresh seeded inputs per trial,
// the reference plan on them, inputs restored from pristine copies and outputs poisoned before
// the candidate runs, comparison with tolerance and NaN parity, the degenerate-reference flag,
// then timing (L2 reset and flush queued before the start event, warm-up, stopping rule) with
// the outputs re-checked during and after timing.
//
// With a PyTorch reference the reference server makes each trial's inputs and outputs; the
// runner asks kagent for them (`ask`), imports them by CUDA IPC, and compares against the
// server's own outputs (see ipc_import.hpp for why the mappings are short-lived).
//
// The work is split by measurement mode, one file each (evaluation_impl.hpp has the map).
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "guarded_buffer.hpp"
#include "harness.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent::runner {

struct EvaluationResult {
  EvalOutcome outcome;
  bool restart = false;  // a sticky CUDA error: the context is unusable, the runner must exit
};

// Asks kagent for a trial's tensors and returns its answer (main.cpp owns the channel).
using AskKagent = std::function<TrialAnswer(const TrialNeed& need)>;

// `kept`: the buffers the last evaluation left (null: none kept). Those of the same kind, name and
// size are used again (freeing and allocating gigabytes costs tens of milliseconds); the rest are
// freed before anything is allocated; this evaluation's buffers are left there when it ends.
EvaluationResult evaluate(const Device& dev, Harness& harness, const EvalRequest& rq, const AskKagent& ask,
                          std::vector<GuardedBuffer>* kept = nullptr);

}  // namespace kagent::runner
