#pragma once
// What a ModelNew evaluation says about the random numbers a PyTorch reference draws inside
// forward (tools/kagent_ref/draws.py): a native candidate gets them as inputs, a ModelNew solution
// draws them itself from the generator state the reference's forward started from.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/spec/op.hpp"

namespace kagent {

// The worker's "trial" request for a trial of the reference server (RefServer::trial's reply):
// with the trial's "draws" (the generator state to start each call from) where it has them.
nlohmann::json modelnew_trial_request(const nlohmann::json& server_trial);

// Appended to the message of a solution whose outputs differ from a reference that draws: which
// draws the reference makes and that only the same draws reproduce them, and the worker's note
// ("draws_note" in `worker_reply`) when the solution's call left torch's generators elsewhere
// than the reference's forward did. Empty when the reference draws nothing.
std::string draws_hint(const std::vector<TensorSpec>& draws, const nlohmann::json& worker_reply);

}  // namespace kagent
