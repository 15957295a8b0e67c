// The record's verdict, by the same rules as bench's records (bench/solution_job.cpp): compile
// failure first, then correct, then the failure stage (timeout, crash, anything else incorrect).
#include "kagent/judge/verdict.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent::judge {

namespace {

std::string string_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string first_line(const std::string& text) {
  const size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return {};
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

Verdict verdict_of(const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("tier") || !record["tier"].is_number_integer())
    throw InputError("evaluation record: \"tier\" missing or not an integer");
  if (!record.contains("compile") || !record["compile"].is_object())
    throw InputError("evaluation record: \"compile\" missing or not an object");
  Verdict v;
  if (auto it = record.find("score"); it != record.end()) v.score = it->get<Score>();
  v.score.tier = record["tier"].get<int>();
  const nlohmann::json outcome = record.value("outcome", nlohmann::json::object());
  if (!record["compile"].value("ok", false)) {
    v.status = "compile_error";
    v.message = string_at(record["compile"], "log");
  } else if (outcome.value("correct", false)) {
    v.status = "correct";
  } else {
    const std::string stage = string_at(outcome, "failure_stage");
    v.status = stage == "timeout" ? "timeout" : stage == "crash" ? "crash" : "incorrect";
    const std::string message = string_at(outcome, "message");
    v.message = message.empty()                    ? string_at(record, "reason")
                : stage.empty() || stage == "none" ? message
                                                   : fmt::format("{}: {}", stage, message);
  }
  return v;
}

std::string verdict_line(const nlohmann::json& record) {
  const Verdict v = verdict_of(record);
  const Score& s = v.score;
  std::string line = fmt::format("{}: tier {}, {}", string_at(record, "candidate"), s.tier, v.status);
  if (v.status != "correct") return line + (v.message.empty() ? "" : ": " + first_line(v.message));
  if (s.candidate_ms) line += fmt::format(", {:.4g} ms", *s.candidate_ms);
  if (s.speedup_vs_eager) line += fmt::format(", {:.2f}x eager", *s.speedup_vs_eager);
  if (s.speedup_vs_compile) line += fmt::format(", {:.2f}x torch.compile", *s.speedup_vs_compile);
  return line;
}

}  // namespace kagent::judge
