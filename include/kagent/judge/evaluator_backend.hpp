#pragma once
// Today's backend: an Evaluator (compile, runner) per worker, kept across requests while they ask
// for the same measurement options, and the PyTorch problems kept warm (eval/warm_problems.hpp)
// across all of them, so that a stream of candidates that mixes problems pays for the runner once
// and for each problem's reference server once rather than on every switch.
#include <filesystem>
#include <memory>
#include <string>

#include "kagent/compile/cache.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/warm_limits.hpp"
#include "kagent/judge/backend.hpp"

namespace kagent::judge {

class EvaluatorBackend : public EvalBackend {
 public:
  EvaluatorBackend(int gpu, std::shared_ptr<CompileCache> cache, WarmLimits warm = {});
  ~EvaluatorBackend() override;
  std::string unavailable() override;
  nlohmann::json evaluate(const CandidateRequest& request) override;
  EvalReport evaluate_report(const CandidateRequest& request) override;
  Evaluator* evaluator_for_request(const CandidateRequest& request) override;
  void expect(const std::vector<CandidateRequest>& next) override;
  WarmState warm() override;

 private:
  int gpu_;
  std::shared_ptr<CompileCache> cache_;
  WarmLimits warm_limits_;
  // The Evaluator for these options, made anew (sharing warm_) when they differ from the last's.
  Evaluator& evaluator_for(const EvalOptions& options);
  // Starts what the announced requests' kinds start ahead, counting `current` in (expect() keeps
  // the announcement until the next evaluate()).
  void start_announced(const CandidateRequest& current);
  std::shared_ptr<WarmProblems> warm_;  // made with the first Evaluator
  std::vector<CandidateRequest> announced_;
  std::unique_ptr<Evaluator> ev_;
  std::string ev_options_;  // the options ev_ was made with (JSON), to know when to make another
};

// The evaluation options a request asks for, on this GPU.
EvalOptions eval_options_of(const CandidateRequest& r, int gpu);

// EvaluatorBackend on each GPU, sharing one compile cache; each keeps up to `warm` problems warm.
BackendFactory evaluator_backends(std::shared_ptr<CompileCache> cache, WarmLimits warm = {});

}  // namespace kagent::judge
