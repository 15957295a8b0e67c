// The plan kind of candidate: one .cu of device code with a /*kagent ... */ launch plan
// (spec/candidate.hpp, docs/candidate.md), compiled by NVRTC and run by kagent-runner in one request:
// the trials, the timing, the re-checks and the A/B pairs, against a native reference run beside it
// or a PyTorch reference whose trials the runner asks for (the reference server makes them).
#include <exception>
#include <optional>

#include <fmt/format.h>

#include "fresh_seed.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/plan_libraries.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent {

namespace {

class PlanEvaluation : public KindEvaluation {
 public:
  explicit PlanEvaluation(EvalContext& ctx) : ctx_(ctx) {}

  bool build(EvalReport& rep) override {
    const Candidate& cand = ctx_.candidate;
    const Op& op = ctx_.op;
    const EvalOptions& opt = ctx_.options();
    rep.compile = compile_checked(cand, &op, ctx_.compiler(), ctx_.arch());
    if (!rep.compile.ok) return false;
    require_plan_libraries(cand);  // cuBLASLt/cuDNN missing: exit 3 here, not a candidate failure
    if (ctx_.baseline) require_plan_libraries(*ctx_.baseline);

    const bool per_launch = ctx_.mode == EvalMode::profile;
    rq_.gpu = opt.gpu;
    rq_.seed = fresh_seed();
    rq_.trials = opt.trials > 0 ? opt.trials : op.correctness_trials;
    rq_.tolerance = op.tolerance;
    rq_.inputs = op.inputs;
    rq_.outputs = op.outputs;
    rq_.scalars = op.scalars;
    rq_.candidate = {cand.path.string(), cand.source, ctx_.write_cubin(rep.compile)};
    rq_.harness_cubin_path = ctx_.harness_cubin();
    rq_.timing = opt.timing;
    rq_.stop_rule = opt.stop_rule;
    rq_.knobs = opt.knobs;
    rq_.per_launch = per_launch;
    rq_.ab_rule = opt.ab_rule;
    rq_.cupti_check = opt.cupti_check;
    rq_.guard_checks = opt.guard_checks;
    rq_.metrics = per_launch;  // the profile: counters too
    if (ctx_.baseline && opt.timing) {
      CompileResult base_c = compile_checked(*ctx_.baseline, &op, ctx_.compiler(), ctx_.arch());
      if (base_c.ok)
        rq_.baseline = PlanSource{ctx_.baseline->path.string(), ctx_.baseline->source, ctx_.write_cubin(base_c)};
      else
        rep.baseline_error = base_c.log;
    }

    if (ctx_.pytorch == nullptr) {
      // A native reference is a plan too: compiled here, run by the runner beside the candidate, and
      // timed once per evaluator for the same shapes and measuring knobs.
      Candidate ref = parse_plan_candidate(read_text_file(op.reference), op.reference);
      CompileResult ref_c = compile_checked(ref, &op, ctx_.compiler(), ctx_.arch());
      if (!ref_c.ok)
        throw InputError(
            fmt::format("{}: the native reference does not compile:\n{}", op.reference.string(), ref_c.log));
      rq_.reference = {op.reference.string(), ref.source, ctx_.write_cubin(ref_c)};
      ref_key_ = Hasher()
                     .add_field(ref_c.key)
                     .add_field(nlohmann::json(op.inputs).dump())
                     .add_field(nlohmann::json(op.outputs).dump())
                     .add_field(nlohmann::json(opt.stop_rule).dump())
                     .add_field(nlohmann::json(opt.knobs).dump())
                     .hex();
      const auto& times = ctx_.native_reference_times();
      if (auto cached = times.find(ref_key_); cached != times.end()) cached_reference_ = cached->second;
      rq_.time_reference = !cached_reference_;
    } else {
      rq_.reference_kind = ReferenceKind::pytorch;
      rq_.time_reference = false;  // the server timed eager and compile
    }
    return true;
  }

  void measure(EvalReport& rep) override {
    // The runner asks for each trial of a PyTorch reference; the server makes it. A server failure
    // (or a runner of another message version) is not the candidate's fault: it is raised once the
    // runner has answered.
    std::exception_ptr server_failure;
    NeedHandler on_need = [&](const nlohmann::json& msg) -> nlohmann::json {
      TrialAnswer answer;
      TrialNeed need;
      try {
        need = msg.get<TrialNeed>();
      } catch (const EnvError& e) {
        server_failure = std::current_exception();
        answer.error = e.what();
        return answer;
      } catch (const std::exception&) {
        answer.error = "unexpected request " + msg.dump();
        return answer;
      }
      if (ctx_.pytorch == nullptr) {
        answer.error = "unexpected request " + msg.dump();
        return answer;
      }
      try {
        nlohmann::json trial = ctx_.ref_server().trial(need.seed);
        answer.tensors = trial.at("tensors").get<std::vector<IpcTensorRef>>();
        answer.fp64_note = trial.value("fp64_note", "");
        if (auto f = trial.find("precision_figures"); f != trial.end() && f->is_object())
          answer.precision_figures = f->get<PrecisionFigures>();
      } catch (const std::exception& e) {
        server_failure = std::current_exception();
        answer = TrialAnswer{};
        answer.error = e.what();
      }
      return answer;
    };
    ChildClient& runner = ctx_.runner();
    ChildReply reply = runner.request(rq_, ctx_.timeout(), on_need);
    if (server_failure) std::rethrow_exception(server_failure);
    rep.sandbox_warning = runner.sandbox_warning();
    if (!reply.ok()) {
      // The runner hung or died: the candidate's doing (the runner restarts for the next one).
      rep.ran = true;
      rep.outcome.failure_stage =
          reply.failure == ChildReply::Failure::timeout ? FailureStage::timeout : FailureStage::crash;
      rep.outcome.message = reply.message;
      if (reply.failure == ChildReply::Failure::start) throw EnvError("kagent-runner did not start: " + reply.message);
    } else if (RunnerResult result = reply.body.get<RunnerResult>(); !result.ok) {
      std::string err = result.error.empty() ? std::string("unknown runner error") : result.error;
      if (result.environment) throw EnvError(err);
      throw Error(ExitCode::environment, "kagent-runner: " + err);
    } else {
      if (!result.outcome) throw Error(ExitCode::environment, "kagent-runner: its reply has no outcome");
      rep.ran = true;
      rep.outcome = std::move(*result.outcome);
      if (rep.outcome.reference_time) ctx_.native_reference_times()[ref_key_] = *rep.outcome.reference_time;
    }
    if (rep.outcome.candidate_time && !rep.outcome.reference_time && cached_reference_) {
      rep.outcome.reference_time = *cached_reference_;
      rep.reference_time_cached = true;
    }
  }

 private:
  EvalContext& ctx_;
  EvalRequest rq_;
  std::string ref_key_;                            // the native reference's timing, by what it depends on
  std::optional<TimingSummary> cached_reference_;  // timed by an earlier evaluation of this evaluator
};

class PlanKind : public CandidateKind {
 public:
  std::string_view name() const override { return kPlanKind; }
  std::string_view noun() const override { return "a plan candidate"; }
  std::vector<std::string> extensions() const override { return {".cu"}; }
  Candidate parse(std::string source, const std::filesystem::path& path) const override {
    return parse_plan_candidate(std::move(source), path);
  }
  CompileResult compile(const Candidate& cand, const Op* op, const Compiler& compiler,
                        const std::string& arch) const override {
    return compile_checked(cand, op, compiler, arch);
  }
  bool profiles_launches() const override { return true; }
  std::unique_ptr<KindEvaluation> evaluation(EvalContext& ctx) const override {
    return std::make_unique<PlanEvaluation>(ctx);
  }
};

}  // namespace

const CandidateKind& plan_kind() {
  static const PlanKind kind;
  return kind;
}

}  // namespace kagent
