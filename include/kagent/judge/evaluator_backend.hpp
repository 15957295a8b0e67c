#pragma once
// Today's backend: an Evaluator (compile, runner, reference server) per worker, kept across
// requests while they ask for the same measurement options, so that a stream of candidates pays
// for the runner and a PyTorch problem's reference server once rather than per candidate.
#include <filesystem>
#include <memory>
#include <string>

#include "kagent/compile/cache.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/judge/backend.hpp"

namespace kagent::judge {

class EvaluatorBackend : public EvalBackend {
 public:
  EvaluatorBackend(int gpu, std::shared_ptr<CompileCache> cache);
  ~EvaluatorBackend() override;
  std::string unavailable() override;
  nlohmann::json evaluate(const CandidateRequest& request) override;
  void expect(const std::vector<CandidateRequest>& next) override;

 private:
  int gpu_;
  std::shared_ptr<CompileCache> cache_;
  std::unique_ptr<Evaluator> ev_;
  std::string ev_options_;  // the options ev_ was made with (JSON), to know when to make another
};

// The evaluation options a request asks for, on this GPU.
EvalOptions eval_options_of(const CandidateRequest& r, int gpu);

// EvaluatorBackend on each GPU, sharing one compile cache.
BackendFactory evaluator_backends(std::shared_ptr<CompileCache> cache);

}  // namespace kagent::judge
