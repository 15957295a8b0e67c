// One evaluation's shared state and its modes in order (evaluation_impl.hpp has the map of which
// file holds which mode).
#include "evaluation.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "evaluation_impl.hpp"
#include "ipc_import.hpp"
#include "kagent/common/files.hpp"

namespace kagent::runner {

namespace {

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Evaluation::Evaluation(const Device& dev, Harness& h, const EvalRequest& rq, const AskKagent& ask,
                       std::vector<GuardedBuffer>* kept)
    : dev_(dev),
      h_(h),
      rq_(rq),
      ask_(ask),
      kept_(kept),
      bounds_(dev, h, splitmix64(rq.seed ^ 0x5EA1ED6A4DB4A9D5ull), rq.guard_checks) {}

Evaluation::~Evaluation() {
  if (kept_ == nullptr) return;
  // Whatever they hold is overwritten before the next candidate sees it: inputs restored from the
  // pristine copies, which the trials fill, and outputs poisoned before every run.
  for (auto* bufs : {&in_, &pristine_, &ref_out_, &cand_out_})
    for (auto& b : *bufs) kept_->push_back(std::move(b));
}

TensorMap Evaluation::tensors(const std::vector<GuardedBuffer>& outs) const {
  TensorMap m;
  for (size_t i = 0; i < rq_.inputs.size(); ++i)
    m[rq_.inputs[i].name] = {rq_.inputs[i].shape, rq_.inputs[i].dtype, in_[i].get(), in_[i].bytes(), true};
  for (size_t i = 0; i < rq_.outputs.size(); ++i)
    m[rq_.outputs[i].name] = {rq_.outputs[i].shape, rq_.outputs[i].dtype, outs[i].get(), outs[i].bytes()};
  return m;
}

void Evaluation::allocate() {
  phase("allocating the evaluation's buffers");
  // The last evaluation's buffers of the same kind, name and size are taken as they are; the rest are
  // freed first, so that what is allocated next has their memory.
  std::vector<GuardedBuffer> left;
  if (kept_ != nullptr) left.swap(*kept_);
  struct Want {
    std::vector<GuardedBuffer>* into;
    size_t bytes;
    const char* kind;
    const std::string* name;
  };
  std::vector<Want> wants;
  for (const auto& t : rq_.inputs) {
    wants.push_back({&in_, static_cast<size_t>(t.bytes()), "input", &t.name});
    wants.push_back({&pristine_, static_cast<size_t>(t.bytes()), "the harness's copy of input", &t.name});
  }
  for (const auto& t : rq_.outputs) {
    wants.push_back({&ref_out_, static_cast<size_t>(t.bytes()), "the reference output", &t.name});
    wants.push_back({&cand_out_, static_cast<size_t>(t.bytes()), "output", &t.name});
  }
  std::vector<std::optional<GuardedBuffer>> found(wants.size());
  for (size_t i = 0; i < wants.size(); ++i) {
    auto it = std::find_if(left.begin(), left.end(), [&](const GuardedBuffer& b) {
      return b.bytes() == wants[i].bytes && b.kind() == wants[i].kind && b.name() == *wants[i].name;
    });
    if (it == left.end()) continue;
    found[i].emplace(std::move(*it));
    left.erase(it);
  }
  left.clear();
  for (size_t i = 0; i < wants.size(); ++i) {
    if (found[i])
      wants[i].into->push_back(std::move(*found[i]));
    else
      wants[i].into->emplace_back(wants[i].bytes, wants[i].kind, *wants[i].name);
  }
  // Twice the L2, read before every timed sample, so no sample starts with a warm cache (or with
  // dirty lines to write back). Its contents do not matter; it is zeroed once so it is defined.
  flush_ = DeviceBuffer(static_cast<size_t>(std::max<int64_t>(dev_.summary().l2_bytes, 1 << 20) * 2));
  check(cu().cuMemsetD8Async(flush_.get(), 0, flush_.bytes(), dev_.stream()), "clear flush buffer");
}

void Evaluation::new_inputs(int trial) {
  const uint64_t trial_seed = splitmix64(rq_.seed + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(trial + 1));
  for (size_t i = 0; i < rq_.inputs.size(); ++i) {
    const TensorSpec& t = rq_.inputs[i];
    h_.fill(in_[i].get(), t.numel(), t.dtype, t.init, splitmix64(trial_seed + i));
    check(cu().cuMemcpyDtoDAsync(pristine_[i].get(), in_[i].get(), in_[i].bytes(), dev_.stream()), "copy inputs");
  }
}

void Evaluation::import_trial(int trial) {
  phase(fmt::format("trial {}: waiting for the reference server", trial));
  const uint64_t trial_seed = splitmix64(rq_.seed + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(trial + 1));
  TrialNeed need;
  need.trial = trial;
  need.seed = trial_seed;
  TrialAnswer answer = ask_(need);
  if (!answer.error.empty()) throw ReferenceFailure(answer.error);
  trial_refs_ = std::move(answer.tensors);
  if (!answer.fp64_note.empty()) fp64_note_ = answer.fp64_note;
  if (answer.precision_figures) figures_ = std::move(answer.precision_figures);
  phase(fmt::format("trial {}: importing the reference inputs", trial));
  IpcImport imp(refs_of(rq_.inputs));
  phase(fmt::format("trial {}: copying the reference inputs", trial));
  for (size_t i = 0; i < rq_.inputs.size(); ++i)
    check(cu().cuMemcpyDtoDAsync(pristine_[i].get(), imp.ptr(rq_.inputs[i].name), pristine_[i].bytes(), dev_.stream()),
          "copy reference inputs");
  dev_.sync();  // before the mappings close
}

std::vector<IpcTensorRef> Evaluation::refs_of(const std::vector<TensorSpec>& specs) const {
  std::vector<IpcTensorRef> out;
  for (const auto& t : specs) {
    auto it =
        std::find_if(trial_refs_.begin(), trial_refs_.end(), [&](const IpcTensorRef& r) { return r.name == t.name; });
    if (it == trial_refs_.end())
      throw ReferenceFailure(fmt::format("the reference server sent no tensor '{}'", t.name));
    if (it->bytes != static_cast<uint64_t>(t.bytes()))
      throw ReferenceFailure(fmt::format("the reference server's tensor '{}' has {} bytes, the signature says {}",
                                         t.name, it->bytes, t.bytes()));
    out.push_back(*it);
  }
  return out;
}

std::vector<IpcTensorRef> Evaluation::fp64_refs_of(const std::vector<TensorSpec>& specs) const {
  std::vector<IpcTensorRef> out;
  for (const auto& t : specs) {
    const std::string name = t.name + "@f64";
    auto it =
        std::find_if(trial_refs_.begin(), trial_refs_.end(), [&](const IpcTensorRef& r) { return r.name == name; });
    if (it == trial_refs_.end()) continue;
    if (it->bytes != static_cast<uint64_t>(t.numel()) * 8)
      throw ReferenceFailure(fmt::format("the reference server's fp64 tensor '{}' has {} bytes, expected {}", name,
                                         it->bytes, t.numel() * 8));
    out.push_back(*it);
  }
  return out;
}

void Evaluation::restore_inputs() {
  for (size_t i = 0; i < in_.size(); ++i)
    check(cu().cuMemcpyDtoDAsync(in_[i].get(), pristine_[i].get(), in_[i].bytes(), dev_.stream()), "restore inputs");
}

void Evaluation::poison(const std::vector<GuardedBuffer>& bufs) {
  // 0xFF bytes: NaN in every float format, -1 in integers; an element never written fails.
  for (const auto& b : bufs) check(cu().cuMemsetD8Async(b.get(), 0xFF, b.bytes(), dev_.stream()), "poison outputs");
}

Buffers Evaluation::all_buffers(const Buffers& extra) const {
  // The plan's own buffers first: a damaged band there is the likeliest and the most telling.
  return join({guarded(in_), guarded(cand_out_), plan_scratch_, guarded(ref_out_), guarded(pristine_), extra});
}

std::optional<std::string> Evaluation::stray_writes(const std::string& who, const std::string& when,
                                                    const Buffers& extra) {
  if (auto d = bounds_.damaged(all_buffers(extra))) return guard_damage_message(who, *d, when);
  if (const GuardedBuffer* b = bounds_.changed()) return private_write_message(who, b->kind(), b->name(), when);
  return std::nullopt;
}

void Evaluation::check_candidate_writes(const std::string& when) {
  if (auto d = bounds_.damaged(all_buffers())) throw BoundsViolation(guard_damage_message("candidate", *d, when));
  if (const GuardedBuffer* b = bounds_.changed()) {
    for (const auto& in : in_)
      if (b == &in)
        throw InputsWritten(fmt::format(
            "the candidate wrote its input '{}', found after {}. Inputs are read-only: the timed runs share one "
            "copy of them, so a kernel that writes its inputs would be timed on other data than it was checked on. "
            "Use a scratch buffer",
            b->name(), when));
    throw BoundsViolation(private_write_message("candidate", b->kind(), b->name(), when));
  }
}

void Evaluation::check_reference_writes(const std::string& when) {
  if (auto m = stray_writes("reference " + rq_.reference.name, when)) throw ReferenceFailure(*m);
}

void Evaluation::prepare_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, CUevent begin,
                                bool restore) {
  check(cu().cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache");
  if (begin != nullptr) check(cu().cuEventRecord(begin, dev_.stream()), "cuEventRecord");
  if (restore) restore_inputs();
  poison(outs);
  plan.poison_scratch();
  h_.flush(flush_.get(), flush_.bytes());
}

EvaluationResult Evaluation::run() {
  EvaluationResult res;
  EvalOutcome& o = res.outcome;
  o.device = dev_.summary();
  o.stop_rule = rq_.stop_rule;
  o.knobs = rq_.knobs;
  try {
    allocate();
    o.flush_bytes = static_cast<int64_t>(flush_.bytes());
    const bool native = rq_.reference_kind == ReferenceKind::cuda;
    Candidate cand = parse_plan_candidate(rq_.candidate.source, rq_.candidate.name);
    Module cand_mod(read_text_file(rq_.candidate.cubin_path));
    PlanExecutor cand_plan(dev_, cand_mod, cand, tensors(cand_out_), rq_.scalars, "candidate " + rq_.candidate.name);
    // A native reference runs here, on inputs the runner makes; a PyTorch one comes from the server.
    std::unique_ptr<Candidate> ref;
    std::unique_ptr<Module> ref_mod;
    std::unique_ptr<PlanExecutor> ref_plan;
    if (native) {
      ref = std::make_unique<Candidate>(parse_plan_candidate(rq_.reference.source, rq_.reference.name));
      ref_mod = std::make_unique<Module>(read_text_file(rq_.reference.cubin_path));
      ref_plan = std::make_unique<PlanExecutor>(dev_, *ref_mod, *ref, tensors(ref_out_), rq_.scalars,
                                                "reference " + rq_.reference.name);
    }
    plan_scratch_ = join({cand_plan.scratch(), ref_plan ? ref_plan->scratch() : Buffers{}});
    bounds_.fill(all_buffers());

    if (!run_trials(cand_plan, ref_plan.get(), o)) return res;
    o.correct = true;
    if (!rq_.timing) return res;
    if (!measure_times(cand_plan, ref_plan.get(), o)) return res;
    if (rq_.per_launch) {
      o.launch_times = time_launches(cand_plan, std::max(1, rq_.knobs.per_launch_samples));
      check_candidate_writes("the per-launch timing");
    }
    if (rq_.metrics) {
      collect_metrics(cand_plan, o);
      check_candidate_writes("the hardware counters' runs");
    }
    if (rq_.cupti_check) {
      o.cupti = cupti_check(cand_plan);
      if (auto f = cupti_flag(*o.cupti)) o.flags.push_back(*f);
      check_candidate_writes("the CUPTI cross-check");
    }
    if (rq_.baseline) o.ab = compare_ab(cand_plan);
    note_bandwidth(o);
  } catch (const PlanError& e) {
    o.failure_stage = FailureStage::plan;
    o.message = e.what();
  } catch (const BoundsViolation& e) {
    o.correct = false;
    o.failure_stage = FailureStage::bounds;
    o.message = e.what();
  } catch (const InputsWritten& e) {
    o.correct = false;
    o.failure_stage = FailureStage::inputs;
    o.message = e.what();
  } catch (const ReferenceFailure& e) {
    o.correct = false;
    o.failure_stage = FailureStage::reference;
    o.message = e.what();
  } catch (const CudaError& e) {
    o.correct = false;
    o.failure_stage = FailureStage::launch;
    o.message = e.what();
    o.out_of_memory = e.rc() == CUDA_ERROR_OUT_OF_MEMORY;
    res.restart = e.sticky();
  }
  return res;
}

EvaluationResult evaluate(const Device& dev, Harness& harness, const EvalRequest& rq, const AskKagent& ask,
                          std::vector<GuardedBuffer>* kept) {
  return Evaluation(dev, harness, rq, ask, kept).run();
}

}  // namespace kagent::runner
