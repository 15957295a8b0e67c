// EvaluatorBackend: `kagent eval`'s own path (load the op, lay the flags over it, Evaluator::evaluate,
// report_json) for each request, with the Evaluator kept between requests of the same options.
#include "kagent/judge/evaluator_backend.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/spec/candidate.hpp"

namespace kagent::judge {

namespace fs = std::filesystem;

EvalOptions eval_options_of(const CandidateRequest& r, int gpu) {
  EvalOptions o;
  o.gpu = gpu;
  o.arch = r.arch;
  o.trials = r.trials;
  o.timing = r.timing;
  o.timeout = r.timeout;
  o.stop_rule = r.stop_rule;
  o.knobs = r.knobs;
  o.allow_torch_ops = r.allow_torch_ops;
  o.refresh_baselines = r.refresh_baselines;
  return o;
}

namespace {

// Everything of EvalOptions a request can change: an Evaluator made for one set serves every
// request that asks for the same.
std::string options_key(const EvalOptions& o) {
  return nlohmann::json{{"arch", o.arch},
                        {"trials", o.trials},
                        {"timing", o.timing},
                        {"timeout_ms", o.timeout.count()},
                        {"stop_rule", o.stop_rule},
                        {"knobs", o.knobs},
                        {"allow_torch_ops", o.allow_torch_ops},
                        {"refresh_baselines", o.refresh_baselines}}
      .dump();
}

}  // namespace

EvaluatorBackend::EvaluatorBackend(int gpu, std::shared_ptr<CompileCache> cache)
    : gpu_(gpu), cache_(std::move(cache)) {}

EvaluatorBackend::~EvaluatorBackend() = default;

std::string EvaluatorBackend::unavailable() {
  if (ev_) return ev_->gpu_problem();
  EvalOptions o;
  o.gpu = gpu_;
  Evaluator probe(o, cache_);  // starts nothing
  return probe.gpu_problem();
}

namespace {

// The kind a request's text is of; InputError naming the kinds there are.
const CandidateKind& kind_of_request(const CandidateRequest& r) {
  return kind_named(r.kind, "kind");
}

// candidate.cu, candidate.py: the text's file, named with its kind's extension.
std::string text_file_name(const CandidateKind& kind) {
  return "candidate" + kind.extensions().front();
}

}  // namespace

nlohmann::json EvaluatorBackend::evaluate(const CandidateRequest& r) {
  Op op = load_op(r.problem);
  if (r.precision) op = with_precision(std::move(op), *r.precision);
  r.overrides.apply(op);
  const std::string shown = !r.name.empty()   ? r.name
                            : !r.file.empty() ? r.file.string()
                                              : text_file_name(kind_of_request(r));
  Candidate cand;
  try {
    cand = candidate_of_request(r);  // a text at its own path (prebuild.hpp)
  } catch (const InputError& e) {
    // The plan block is part of the candidate: it fails as a compile error does, with tier -1.
    return {{"candidate", shown},
            {"tier", -1},
            {"reason", "the candidate does not parse"},
            {"compile", {{"ok", false}, {"log", e.what()}}}};
  }
  const EvalOptions options = eval_options_of(r, gpu_);
  const std::string key = options_key(options);
  if (!ev_ || key != ev_options_) {
    ev_.reset();
    ev_ = std::make_unique<Evaluator>(options, cache_);
    ev_options_ = key;
  }
  try {
    nlohmann::json record = report_json(ev_->evaluate(op, cand));
    record["candidate"] = shown;
    return record;
  } catch (const InputError&) {
    throw;  // the problem or a plan that does not fit it: the Evaluator is still sound
  } catch (...) {
    ev_.reset();  // its runner or reference server may be gone: the next request starts afresh
    throw;
  }
}

void EvaluatorBackend::expect(const std::vector<CandidateRequest>& next) {
  for (const CandidateRequest& r : next) {
    try {
      // Most kinds start nothing ahead (plans compile in the prebuilder): nothing is read for them.
      if (!(r.file.empty() ? kind_of_request(r) : kind_of_file(r.file)).starts_ahead()) continue;
      // Only an Evaluator of the same options can take what is started. One is made for the hint
      // when there is none (it starts nothing by itself); one made for other options stays.
      const EvalOptions options = eval_options_of(r, gpu_);
      const std::string key = options_key(options);
      if (!ev_) {
        ev_ = std::make_unique<Evaluator>(options, cache_);
        ev_options_ = key;
      }
      if (key != ev_options_) continue;
      Op op = load_op(r.problem);
      ev_->expect(op, candidate_of_request(r));
    } catch (const std::exception& e) {
      spdlog::debug("nothing started ahead for {}: {}", r.name.empty() ? r.file.string() : r.name, e.what());
    }
  }
}

BackendFactory evaluator_backends(std::shared_ptr<CompileCache> cache) {
  return [cache](int gpu) -> std::unique_ptr<EvalBackend> { return std::make_unique<EvaluatorBackend>(gpu, cache); };
}

}  // namespace kagent::judge
