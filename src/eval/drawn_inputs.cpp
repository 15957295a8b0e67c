#include "kagent/eval/drawn_inputs.hpp"

#include <fmt/format.h>

namespace kagent {

nlohmann::json modelnew_trial_request(const nlohmann::json& server_trial) {
  nlohmann::json rq = {{"cmd", "trial"}};
  if (auto d = server_trial.find("draws"); d != server_trial.end() && d->is_object()) rq["draws"] = *d;
  return rq;
}

std::string draws_hint(const std::vector<TensorSpec>& draws, const nlohmann::json& worker_reply) {
  if (draws.empty()) return "";
  std::string which;
  for (const auto& d : draws) which += fmt::format("{}{}: {}", which.empty() ? "" : "; ", d.name, d.drawn);
  std::string s = fmt::format(
      " (the reference draws random numbers in forward: {}. Each call of a ModelNew solution starts from the "
      "generator state the reference's forward started from, so torch's own dropout or randn reproduces them only "
      "when the solution makes the same draws: the same ops on the same shapes, in the same order",
      which);
  if (auto n = worker_reply.find("draws_note"); n != worker_reply.end() && n->is_string())
    s += "; " + n->get<std::string>();
  return s + ")";
}

}  // namespace kagent
