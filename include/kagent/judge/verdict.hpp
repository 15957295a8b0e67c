#pragma once
// What a front end needs to know of `kagent eval --json`'s record, read from the record alone
// (whatever backend wrote it): the outcome by results.jsonl's names, the tier and the times, and
// the one line `kagent eval` prints per candidate when it is given several.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kagent::judge {

struct Verdict {
  // "correct", "compile_error", "incorrect", "crash" (the candidate killed the harness's child),
  // "timeout": results.jsonl's status names for a candidate's verdict.
  std::string status;
  int tier = -1;
  std::optional<double> candidate_ms, eager_ms, compile_ms;
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::string message;  // why, when not correct: the compile log or the failure, as the record has it
  std::string device, precision, stop_rule;
  std::optional<double> atol, rtol;
};

// Throws InputError naming the key when the record lacks "tier" or "compile".
Verdict verdict_of(const nlohmann::json& record);

// "A.cu: tier 2, correct, 0.0412 ms, 1.52x eager, 0.81x torch.compile" or
// "B.cu: tier -1, compile_error: B.cu(12): error: ..." (the first line of why).
std::string verdict_line(const nlohmann::json& record);

}  // namespace kagent::judge
