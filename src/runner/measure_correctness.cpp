// Correctness: the trials, the candidate's outputs against the reference's (and the fp64
// reference's), the re-checks during and after timing, and the flags on a reference that cannot
// tell right from wrong (degenerate, weak).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "evaluation_impl.hpp"
#include "ipc_import.hpp"
#include "output_check.hpp"

namespace kagent::runner {

bool Evaluation::run_trials(PlanExecutor& cand_plan, PlanExecutor* ref_plan, EvalOutcome& o) {
  const bool native = ref_plan != nullptr;
  for (int t = 0; t < rq_.trials; ++t) {
    const std::string ctx = fmt::format("trial {}", t);
    if (native) {
      new_inputs(t);
      bounds_.seal(guarded(pristine_));
      bounds_.unseal(guarded(ref_out_));  // the reference rewrites them
      poison(ref_out_);
      ref_plan->poison_scratch();
      ref_plan->run(true, ctx);
      check_reference_writes("its run for correctness " + ctx);
      bounds_.seal(guarded(ref_out_));
    } else {
      import_trial(t);
      bounds_.seal(guarded(pristine_));
    }
    // The candidate sees untouched inputs and outputs that hold nothing it did not write.
    restore_inputs();
    poison(cand_out_);
    cand_plan.poison_scratch();
    cand_plan.run(true, ctx);
    o.trials_run = t + 1;
    check_candidate_writes("correctness " + ctx);
    const bool match = native ? outputs_match(t, "correctness", o, pointers(ref_out_), {})
                              : match_server_outputs(t, "correctness", t == rq_.trials - 1, o);
    if (!match) {
      if (o.failure_stage == FailureStage::none) o.failure_stage = FailureStage::correctness;
      return false;
    }
  }
  return true;
}

bool Evaluation::match_server_outputs(int trial, const std::string& when, bool keep, EvalOutcome& o) {
  std::vector<IpcTensorRef> refs = refs_of(rq_.outputs), refs64 = fp64_refs_of(rq_.outputs);
  refs.insert(refs.end(), refs64.begin(), refs64.end());
  phase(fmt::format("{} (trial {}): importing the reference outputs", when, trial));
  IpcImport imp(refs);  // one import: a tensor and its twin may share an allocation's handle
  phase(fmt::format("{} (trial {}): comparing outputs", when, trial));
  std::vector<CUdeviceptr> server, server64;
  for (const auto& t : rq_.outputs) {
    server.push_back(imp.ptr(t.name));
    const bool has =
        std::any_of(refs64.begin(), refs64.end(), [&](const auto& r) { return r.name == t.name + "@f64"; });
    server64.push_back(has ? imp.ptr(t.name + "@f64") : 0);
  }
  bool ok = outputs_match(trial, when, o, server, server64);
  if (ok && keep) {
    phase("keeping the last trial's reference outputs for the re-checks");
    for (size_t i = 0; i < server.size(); ++i)
      check(cu().cuMemcpyDtoDAsync(ref_out_[i].get(), server[i], ref_out_[i].bytes(), dev_.stream()),
            "copy reference outputs");
    // The twins too, for the re-checks, where they fit (with 1 GiB to spare for the timing).
    ref64_out_.clear();
    ref64_out_.resize(server64.size());
    fp64_not_copied_ = false;
    for (size_t i = 0; i < server64.size(); ++i) {
      if (server64[i] == 0) continue;
      const size_t bytes = static_cast<size_t>(rq_.outputs[i].numel()) * 8;
      size_t free = 0, total = 0;
      check(cu().cuMemGetInfo(&free, &total), "cuMemGetInfo");
      if (free < bytes + (size_t(1) << 30)) {
        fp64_not_copied_ = true;
        continue;
      }
      ref64_out_[i] = DeviceBuffer(bytes);
      check(cu().cuMemcpyDtoDAsync(ref64_out_[i].get(), server64[i], bytes, dev_.stream()), "copy fp64 reference");
    }
  }
  dev_.sync();  // before the mappings close
  if (ok && keep) bounds_.seal(guarded(ref_out_));
  return ok;
}

bool Evaluation::recheck_outputs(const std::string& when, EvalOutcome& o) {
  // Against the fp32 copy alone first: an element within the tolerance of it passes whatever the
  // fp64 twin says (the twin only rescues elements outside it), and this reads half the bytes. Only
  // outputs that fail here are checked again with the twin, which decides and reports.
  // The quick check holds the precision rule to its lower bound (output_check.cpp), from the
  // figures the trials measured: it starts from their errors.
  const OutputCheck quick_check{rq_.outputs, rq_.tolerance, rq_.trials - 1, when, false, figures()};
  EvalOutcome quick;
  quick.errors = o.errors;
  const bool passed = check_outputs(h_, quick_check, pointers(cand_out_), pointers(ref_out_), {}, quick);
  if (passed || quick.failure_stage == FailureStage::precision) {
    for (size_t i = 0; i < quick.errors.size(); ++i) {
      if (o.errors.size() <= i) o.errors.resize(quick.errors.size());
      o.errors[i].tensor = quick.errors[i].tensor;
      o.errors[i].max_abs = std::max(o.errors[i].max_abs, quick.errors[i].max_abs);
    }
    if (passed) return true;
    o.failure_stage = quick.failure_stage;
    o.message = quick.message;
    return false;
  }
  if (fp64_not_copied_) return match_server_outputs(rq_.trials - 1, when, false, o);
  std::vector<CUdeviceptr> ref64(rq_.outputs.size(), 0);
  for (size_t i = 0; i < ref64_out_.size() && i < ref64.size(); ++i) ref64[i] = ref64_out_[i].get();
  return outputs_match(rq_.trials - 1, when, o, pointers(ref_out_), ref64);
}

void Evaluation::enqueue_recheck(size_t slot) {
  const size_t per_slot = rq_.outputs.size() * Harness::kCompareSlotBytes;
  if (recheck_done_.empty()) {
    recheck_stats_ = DeviceBuffer(kGroupSlots * per_slot);
    recheck_host_ = HostBuffer(kGroupSlots * per_slot);
    recheck_done_.resize(kGroupSlots);
  }
  const CUdeviceptr base = recheck_stats_.get() + slot * per_slot;
  for (size_t i = 0; i < rq_.outputs.size(); ++i) {
    const TensorSpec& t = rq_.outputs[i];
    const CUdeviceptr ref64 = i < ref64_out_.size() ? ref64_out_[i].get() : 0;
    h_.enqueue_compare(base + i * Harness::kCompareSlotBytes, cand_out_[i].get(), ref_out_[i].get(), t.numel(), t.dtype,
                       rq_.tolerance, ref64);
  }
  auto* host = static_cast<unsigned char*>(recheck_host_.get()) + slot * per_slot;
  check(cu().cuMemcpyDtoHAsync(host, base, per_slot, dev_.stream()), "queue a re-check's results");
  check(cu().cuEventRecord(recheck_done_[slot].get(), dev_.stream()), "cuEventRecord");
}

bool Evaluation::read_recheck(size_t slot, const std::string& when, EvalOutcome& o) {
  check(cu().cuEventSynchronize(recheck_done_[slot].get()), when);
  const size_t per_slot = rq_.outputs.size() * Harness::kCompareSlotBytes;
  const auto* host = static_cast<const unsigned char*>(recheck_host_.get()) + slot * per_slot;
  const OutputCheck chk{rq_.outputs, rq_.tolerance, rq_.trials - 1, when, false, figures()};
  for (size_t i = 0; i < rq_.outputs.size(); ++i) {
    const TensorSpec& t = rq_.outputs[i];
    const CUdeviceptr ref64 = i < ref64_out_.size() ? ref64_out_[i].get() : 0;
    uint64_t words[Harness::kCompareSlotBytes / 8];
    std::memcpy(words, host + i * Harness::kCompareSlotBytes, sizeof words);
    double first_bad_value = 0;
    const CompareResult c = Harness::decode_compare(words, ref64 != 0, &first_bad_value);
    // The candidate's value was read on the GPU right after the comparison; the reference's (and
    // its twin's) are still there, sealed.
    auto values = [&] {
      const auto at = static_cast<int64_t>(c.first_bad);
      MismatchValues v{first_bad_value, h_.read(ref_out_[i].get(), at, t.dtype), std::nullopt};
      if (ref64 != 0) v.reference64 = h_.read(ref64, at, DType::f64);
      return v;
    };
    if (!judge_output(chk, i, c, values, o)) return false;
  }
  return true;
}

bool Evaluation::outputs_match(int trial, const std::string& when, EvalOutcome& o,
                               const std::vector<CUdeviceptr>& reference, const std::vector<CUdeviceptr>& reference64) {
  if (!fp64_note_.empty()) o.fp64_note = fp64_note_;
  const OutputCheck chk{rq_.outputs, rq_.tolerance, trial, when, trial == 0 && when == "correctness", figures()};
  return check_outputs(h_, chk, pointers(cand_out_), reference, reference64, o);
}

}  // namespace kagent::runner
