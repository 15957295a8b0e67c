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

#include <map>

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
  o.torch_ops = r.torch_ops;
  o.refresh_baselines = r.refresh_baselines;
  o.baselines = r.baselines;
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
                        {"torch_ops", torch_ops_name(o.torch_ops)},
                        {"refresh_baselines", o.refresh_baselines},
                        {"baselines", o.baselines ? o.baselines->path().string() : std::string()}}
      .dump();
}

}  // namespace

EvaluatorBackend::EvaluatorBackend(int gpu, std::shared_ptr<CompileCache> cache, WarmLimits warm)
    : gpu_(gpu), cache_(std::move(cache)), warm_limits_(warm) {}

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

namespace {

// The request's problem as `kagent eval` lays its flags over it.
Op op_of_request(const CandidateRequest& r) {
  Op op = load_op(r.problem);
  if (r.precision) op = with_precision(std::move(op), *r.precision);
  r.overrides.apply(op);
  return op;
}

}  // namespace

Evaluator& EvaluatorBackend::evaluator_for(const EvalOptions& options) {
  const std::string key = options_key(options);
  if (!ev_ || key != ev_options_) {
    ev_.reset();
    ev_ = std::make_unique<Evaluator>(options, cache_);
    ev_options_ = key;
    // The problems kept warm outlive the evaluator: a request with other options finds them.
    if (!warm_) warm_ = std::make_shared<WarmProblems>(gpu_, warm_limits_);
    ev_->set_warm_problems(warm_);
  }
  return *ev_;
}

namespace {

// The record's "candidate": the request's name, else its file, else its kind's file name.
std::string shown_name(const CandidateRequest& r) {
  return !r.name.empty() ? r.name : !r.file.empty() ? r.file.string() : text_file_name(kind_of_request(r));
}

}  // namespace

nlohmann::json EvaluatorBackend::evaluate(const CandidateRequest& r) {
  try {
    return record_of_report(evaluate_report(r), r);
  } catch (const CandidateParseError& e) {
    // The plan block is part of the candidate: it fails as a compile error does, with tier -1.
    return {{"candidate", shown_name(r)},
            {"tier", -1},
            {"reason", "the candidate does not parse"},
            {"compile", {{"ok", false}, {"log", e.what()}}}};
  }
}

EvalReport EvaluatorBackend::evaluate_report(const CandidateRequest& r) {
  Op op = op_of_request(r);
  Candidate cand;
  try {
    cand = candidate_of_request(r);  // a text at its own path (prebuild.hpp)
  } catch (const InputError& e) {
    throw CandidateParseError(e.what());
  }
  Evaluator& ev = evaluator_for(eval_options_of(r, gpu_));
  start_announced(r);
  try {
    return ev.evaluate(op, cand, r.mode);
  } catch (const InputError&) {
    throw;  // the problem or a plan that does not fit it: the Evaluator is still sound
  } catch (...) {
    // Its runner or the problem's server may be gone: the next request starts them afresh (the
    // other problems kept warm stay).
    if (warm_) warm_->drop_current();
    ev_.reset();
    throw;
  }
}

Evaluator* EvaluatorBackend::evaluator_for_request(const CandidateRequest& r) {
  return &evaluator_for(eval_options_of(r, gpu_));
}

void EvaluatorBackend::expect(const std::vector<CandidateRequest>& next) {
  announced_ = next;
  for (const CandidateRequest& r : next) {
    try {
      // A problem started ahead serves any options: started now. One Evaluator is made for the hint
      // when there is none (it starts nothing by itself); one made for other options stays.
      const EvalOptions options = eval_options_of(r, gpu_);
      Evaluator& ev = ev_ ? *ev_ : evaluator_for(options);
      ev.expect_problem(op_of_request(r), options_key(options) == ev_options_);
    } catch (const std::exception& e) {
      spdlog::debug("{} not started ahead: {}", r.problem.string(), e.what());
    }
  }
}

void EvaluatorBackend::start_announced(const CandidateRequest& current) {
  // What a candidate's kind starts ahead (a ModelNew worker), once its Evaluator (of the request's
  // options) is the one that will take it: a worker per announced request, the same source twice
  // included. The current request's own work is counted in, since its evaluation takes it now.
  std::vector<CandidateRequest> next = std::move(announced_);
  announced_.clear();
  struct Want {
    Op op;
    Candidate cand;
    size_t count = 0;
  };
  std::map<std::string, Want> wants;
  std::vector<std::string> order;
  auto add = [&](const CandidateRequest& r) {
    try {
      // Most kinds start nothing ahead (plans compile in the prebuilder): nothing is read for them.
      if (!(r.file.empty() ? kind_of_request(r) : kind_of_file(r.file)).starts_ahead()) return;
      if (options_key(eval_options_of(r, gpu_)) != ev_options_) return;
      Op op = op_of_request(r);
      Candidate cand = candidate_of_request(r);
      const std::string key = ahead_key(cand, op);
      auto [it, fresh] = wants.try_emplace(key, Want{std::move(op), std::move(cand), 0});
      if (fresh) order.push_back(key);
      it->second.count += 1;
    } catch (const std::exception& e) {
      spdlog::debug("nothing started ahead for {}: {}", r.name.empty() ? r.file.string() : r.name, e.what());
    }
  };
  if (next.empty() || !ev_) return;
  add(current);
  for (const CandidateRequest& r : next) add(r);
  for (const std::string& key : order) {
    const Want& w = wants.at(key);
    ev_->expect(w.op, w.cand, w.count);
  }
}

WarmState EvaluatorBackend::warm() {
  WarmState s;
  s.limit = warm_limits_.max_problems;
  s.memory_share = warm_limits_.memory_share;
  if (warm_) static_cast<WarmStats&>(s) = warm_->stats();
  return s;
}

EvalReport EvalBackend::evaluate_report(const CandidateRequest& request) {
  throw EnvError(fmt::format("this evaluation backend gives records, not reports ({})", request.name));
}

nlohmann::json record_of_report(const EvalReport& report, const CandidateRequest& r) {
  nlohmann::json record = report_json(report);
  record["candidate"] = !r.name.empty()   ? r.name
                        : !r.file.empty() ? r.file.string()
                                          : text_file_name(kind_named(r.kind, "kind"));
  return record;
}

std::string problem_key(const fs::path& problem) {
  return warm_key(problem);
}

BackendFactory evaluator_backends(std::shared_ptr<CompileCache> cache, WarmLimits warm) {
  return [cache, warm](int gpu) -> std::unique_ptr<EvalBackend> {
    return std::make_unique<EvaluatorBackend>(gpu, cache, warm);
  };
}

}  // namespace kagent::judge
