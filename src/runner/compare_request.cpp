// {"cmd": "compare"}: a ModelNew solution's outputs and inputs, exported by its worker over CUDA
// IPC, against the reference server's trial (runner_messages.hpp, CompareRequest). The solution's
// Python process can patch anything of its own; the verdict on its outputs is made here, by the
// same check as a plan's outputs (output_check.hpp).
#include "compare_request.hpp"

#include <fmt/format.h>

#include "ipc_import.hpp"
#include "kagent/protocol/tensor_alias.hpp"
#include "output_check.hpp"

namespace kagent::runner {

namespace {

bool has(const std::vector<IpcTensorRef>& refs, const std::string& name) {
  for (const auto& r : refs)
    if (r.name == name) return true;
  return false;
}

// The refs of `refs` named in `names`, each once: IpcImport opens what it is given.
std::vector<IpcTensorRef> only(const std::vector<IpcTensorRef>& refs, const std::vector<std::string>& names) {
  std::vector<IpcTensorRef> out;
  for (const auto& n : names)
    for (const auto& r : refs)
      if (r.name == n) {
        out.push_back(r);
        break;
      }
  return out;
}

}  // namespace

EvalOutcome compare_solution(const Device& dev, Harness& h, const CompareRequest& rq) {
  EvalOutcome o;
  o.device = dev.summary();
  std::vector<std::string> ref_names, cand_names;
  for (const auto& t : rq.inputs) ref_names.push_back(t.name), cand_names.push_back(t.name);
  for (const auto& t : rq.outputs) {
    ref_names.push_back(t.name);
    cand_names.push_back(t.name);
    if (has(rq.reference, t.name + "@f64")) ref_names.push_back(t.name + "@f64");
  }
  for (const auto& n : cand_names)
    if (!has(rq.candidate, n)) throw std::runtime_error(fmt::format("the solution's worker did not send '{}'", n));
  // Before any value is read: an output in the input's memory passes every value check where the
  // result equals the input (tensor_alias.hpp).
  std::vector<std::string> in_names, out_names;
  for (const auto& t : rq.inputs) in_names.push_back(t.name);
  for (const auto& t : rq.outputs) out_names.push_back(t.name);
  if (auto alias = aliased_output(rq.candidate, rq.reference, out_names, in_names)) {
    o.failure_stage = FailureStage::inputs;
    o.message = fmt::format("{} ({}, trial {})", *alias, rq.when, rq.trial);
    return o;
  }
  IpcImport ref(only(rq.reference, ref_names));
  IpcImport cand(only(rq.candidate, cand_names));

  // Inputs first: a solution that zeroes its inputs and returns zeros is caught for what it did.
  const Tolerance exact{0, 0};
  for (const auto& t : rq.inputs) {
    CompareResult c = h.compare(cand.ptr(t.name), ref.ptr(t.name), t.numel(), t.dtype, exact);
    if (c.mismatches == 0) continue;
    o.failure_stage = FailureStage::inputs;
    o.message = fmt::format(
        "the solution wrote its input '{}' ({}, trial {}): {} of {} elements changed; first at index {}: {:.8g} "
        "instead of {:.8g}. Inputs are read-only: the reference saw them unchanged",
        t.name, rq.when, rq.trial, c.mismatches, t.numel(), c.first_bad,
        h.read(cand.ptr(t.name), static_cast<int64_t>(c.first_bad), t.dtype),
        h.read(ref.ptr(t.name), static_cast<int64_t>(c.first_bad), t.dtype));
    dev.sync();
    return o;
  }
  std::vector<CUdeviceptr> c_out, r_out, r64;
  for (const auto& t : rq.outputs) {
    c_out.push_back(cand.ptr(t.name));
    r_out.push_back(ref.ptr(t.name));
    r64.push_back(has(rq.reference, t.name + "@f64") ? ref.ptr(t.name + "@f64") : 0);
  }
  const OutputCheck chk{rq.outputs, rq.tolerance,   rq.trial,
                        rq.when,    rq.first_check, rq.precision_figures ? &*rq.precision_figures : nullptr};
  o.correct = check_outputs(h, chk, c_out, r_out, r64, o);
  if (!o.correct && o.failure_stage == FailureStage::none) o.failure_stage = FailureStage::correctness;
  dev.sync();  // before the mappings close
  return o;
}

}  // namespace kagent::runner
