#pragma once
// What a front end needs to know of `kagent eval --json`'s record, read from the record alone
// (whatever backend wrote it): the outcome by results.jsonl's names, the record's Score (its
// "score" object: common/score.hpp), and the one line `kagent eval` prints per candidate when it is
// given several.
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/common/score.hpp"

namespace kagent::judge {

struct Verdict {
  // "correct", "compile_error", "incorrect", "crash" (the candidate killed the harness's child),
  // "timeout": results.jsonl's status names for a candidate's verdict.
  std::string status;
  std::string message;  // why, when not correct: the compile log or the failure, as the record has it
  // The record's "score" (tier, times, speedups, precision, tolerance, GPU, stop rule, flags); a
  // record without one (a compile failure found without a GPU) has only its tier.
  Score score;
};

// Throws InputError naming the key when the record lacks "tier" or "compile", or its "score" is
// malformed.
Verdict verdict_of(const nlohmann::json& record);

// "A.cu: tier 2, correct, 0.0412 ms, 1.52x eager, 0.81x torch.compile" or
// "B.cu: tier -1, compile_error: B.cu(12): error: ..." (the first line of why).
std::string verdict_line(const nlohmann::json& record);

}  // namespace kagent::judge
