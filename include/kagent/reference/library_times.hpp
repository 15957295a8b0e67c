#pragma once

// The reference's library calls, each timed alone by the reference server (tools/kagent_ref/
// library_times.py): what cuBLAS and cuDNN take for the problem's own matrix products and
// convolutions, and PyTorch's fused kernels for its attention. The task states them so that the
// choice between a plan's gemm or conv library step and a kernel of one's own is made on numbers.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kagent {

struct RefLibraryCall {
  std::string kind;                  // "gemm", "conv" or "attention"
  std::string library;               // what runs it: "cuBLAS", "cuDNN", ...
  std::string op;                    // the aten operator: "aten.addmm"
  std::string args;                  // its arguments by the operator's schema: "input [16, 3, 64, 64] float32, ..."
  int calls = 0;                     // how often one forward call makes it
  std::optional<double> median_ms;   // one call's median; nullopt: not timed (the measurement's budget was spent)
  std::optional<double> fastest_ms;  // a convolution's at cuDNN's fastest algorithm (benchmark mode)
  // The call as kagent's own plan step (tools/kagent_ref/library_steps.py: a whole plan, one gemm or
  // conv step on scratch of the call's shapes), null where no one step expresses it (plan_note says
  // why) or for attention.
  nlohmann::json plan;
  std::string plan_note;
  // That step timed alone by kagent-runner (Evaluator::time_library_steps): its median, what ran
  // ("cuBLASLt gemm ..."), or why it did not.
  std::optional<double> step_ms;
  std::string step;
  std::string step_error;
};

struct RefLibraryTimes {
  std::vector<RefLibraryCall> calls;  // largest total first
  double total_ms = 0;                // the timed calls over one forward
  std::string note;                   // what was left out, or why there are none
  bool cached = false;
};

void from_json(const nlohmann::json& j, RefLibraryCall& c);
void from_json(const nlohmann::json& j, RefLibraryTimes& t);
void to_json(nlohmann::json& j, const RefLibraryCall& c);
void to_json(nlohmann::json& j, const RefLibraryTimes& t);

// The times as the task and `kagent ref` state them: a lead sentence, then one line per call (at
// most `max_rows`, the rest counted) with kagent's own step's time where it was measured, then
// their sum against torch eager's time where it is known.
// "" where the reference makes no library call.
std::string library_times_text(const RefLibraryTimes& t, std::optional<double> eager_ms, size_t max_rows = 8);

}  // namespace kagent
