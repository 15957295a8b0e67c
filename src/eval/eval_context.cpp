// A kind's view of one evaluation and of the evaluator's means (candidate_kind.hpp).
#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kind.hpp"

namespace kagent {

EvalContext::EvalContext(Evaluator& evaluator, const Candidate& candidate_, const Candidate* baseline_, const Op& op_,
                         const PyTorchReference* pytorch_, EvalMode mode_)
    : candidate(candidate_), baseline(baseline_), op(op_), pytorch(pytorch_), mode(mode_), ev_(evaluator) {}

const EvalOptions& EvalContext::options() const {
  return ev_.opt_;
}

std::chrono::milliseconds EvalContext::timeout() const {
  return ev_.timeout_left();
}

const std::string& EvalContext::arch() const {
  return ev_.arch_;
}

const Compiler& EvalContext::compiler() const {
  return ev_.compiler_;
}

std::string EvalContext::write_cubin(const CompileResult& r) {
  return ev_.write_cubin(r);
}

std::string EvalContext::harness_cubin() {
  return ev_.harness_cubin();
}

ChildClient& EvalContext::runner() {
  return ev_.runner();
}

RefServer& EvalContext::ref_server() {
  RefServer* server = ev_.ref_server();
  if (server == nullptr)
    throw Error(ExitCode::environment, "a PyTorch reference's server was asked for, and none runs");
  return *server;
}

std::unique_ptr<AheadWork> EvalContext::take_ahead() {
  if (!ev_.ahead_) return nullptr;
  return ev_.ahead_->take(ahead_key(candidate, op));
}

std::map<std::string, TimingSummary>& EvalContext::native_reference_times() {
  return ev_.reference_times_;
}

}  // namespace kagent
