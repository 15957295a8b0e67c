#pragma once
// What `kagent serve` accepts, read from a request's JSON body by one function that needs neither
// the network nor a GPU (the fuzz target tests/fuzz/fuzz_serve_request.cpp drives it). Every
// refusal is a RequestError with the HTTP status, the field it is about ("measure.min_samples",
// "requests[3].kind", "body") and what was expected; nothing else escapes.
//
// POST /v1/evaluate (docs/serve.md):
//   {"source": "...", "kind": "plan"|"modelnew", "problem": "level1/19" | "level1/19_ReLU.py" | "ops/x/op.json",
//    "name": "...", "precision": "fp32"|"tf32"|"fp16"|"bf16", "atol": x, "rtol": x, "tolerance": x,
//    "trials": n, "timing": bool, "timeout_s": x,
//    "measure": {"min_samples", "max_samples", "min_gpu_s", "max_gpu_s", "max_wall_s", "target_rse",
//                "warmup_samples", "warmup_ms", "warmup_credit_gap_ms", "check_every", "cupti_samples",
//                "launch_samples", "torch_ops": "fail"|"cap"|"allow", "allow_torch_ops"}}
// POST /v1/evaluate_batch: {"requests": [evaluate request, ...]}
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/common/error.hpp"
#include "kagent/judge/backend.hpp"

namespace kagent::serve {

class RequestError : public InputError {
 public:
  RequestError(int status, std::string field, const std::string& message)
      : InputError(field.empty() ? message : field + ": " + message), status_(status), field_(std::move(field)) {}
  int status() const { return status_; }               // 400, 413, ...
  const std::string& field() const { return field_; }  // "" when about no field

 private:
  int status_;
  std::string field_;
};

struct RequestLimits {
  // 413 beyond. A trainer step's batch (1024 sources of tens of KiB, JSON-escaped) fits.
  size_t max_body_bytes = size_t{64} << 20;
  size_t max_source_bytes = size_t{1} << 20;  // a candidate's text (413 beyond)
  size_t max_batch = 1024;                    // requests of one batch (413 beyond): an RL step's
  double default_timeout_s = 60;              // the GPU part's limit when a request gives none
  double max_timeout_s = 600;                 // the most a request may ask for
  // The candidate kinds' names a request's "kind" may give (the registry's: candidate_kind_names in
  // eval/candidate_kinds.hpp, filled in by the service); empty: any name, the backend judges it.
  std::vector<std::string> kinds;
  // The measurement preset of a request whose "measure" names none (`kagent serve --preset`).
  std::string default_preset = "default";
  // What PyTorch's operators doing a ModelNew solution's work earn when a request does not say
  // (`kagent serve --torch-ops`): fail, so that an RL reward never pays for calling PyTorch.
  TorchOps default_torch_ops = TorchOps::fail;
  // Every request's PyTorch baselines from this shared file (`kagent serve --baselines`); null: each
  // worker's GPU measures its own.
  std::shared_ptr<const BaselinesFile> baselines;
};

// A request as read: the candidate and its measurement, with the problem as the client named it
// (resolve_problem, problem_path.hpp, turns it into a file under the problems root).
struct EvaluateRequest {
  judge::CandidateRequest candidate;  // .problem still empty
  std::string problem;                // as given
};

// Throws RequestError: 413 for a body or source over its limit; 400 for what is not JSON, an
// unknown field, a missing one, a wrong type or a value out of range, naming the field.
EvaluateRequest parse_evaluate_request(std::string_view body, const RequestLimits& limits);
// {"requests": [...]}: 1 to limits.max_batch requests (413 beyond), each as above ("requests[i].").
std::vector<EvaluateRequest> parse_batch_request(std::string_view body, const RequestLimits& limits);

}  // namespace kagent::serve
