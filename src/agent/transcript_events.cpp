#include "kagent/agent/transcript_events.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/saturate.hpp"

namespace kagent::agent {

namespace {

using nlohmann::json;

// Lenient field readers: a transcript is read back on resume, and a figure of the wrong type or
// out of range (1e300) is left at its default, never converted (UB).
std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}
double number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
std::optional<int> integer(const json& j, const char* key, int lo = INT_MIN) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  auto v = json_integer(*it, lo, INT_MAX);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}
bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

constexpr const char* kReplyKeys[] = {"turn",      "stop_reason", "input_tokens", "output_tokens", "tokens_estimated",
                                      "latency_s", "attempts",    "empty"};

}  // namespace

void to_json(json& j, const StartEvent& e) {
  j = {{"type", StartEvent::kType},
       {"version", e.version},
       {"op", e.op},
       {"llm", e.llm},
       {"budget", {{"turns", e.budget_turns}, {"minutes", e.budget_minutes}, {"tokens", e.budget_tokens}}},
       {"gpu", e.gpu}};
}
void from_json(const json& j, StartEvent& e) {
  e.version = integer(j, "version", 1).value_or(1);
  e.op = str(j, "op");
  e.llm = str(j, "llm");
  const json budget = j.value("budget", json::object());
  if (budget.is_object()) {
    e.budget_turns = integer(budget, "turns").value_or(0);
    e.budget_minutes = number(budget, "minutes");
    e.budget_tokens = json_count(budget.value("tokens", json()));
  }
  e.gpu = str(j, "gpu");
}

void to_json(json& j, const ResumeEvent& e) {
  j = {{"type", ResumeEvent::kType}, {"version", e.version}, {"turns", e.turns}, {"llm", e.llm}};
}
void from_json(const json& j, ResumeEvent& e) {
  e.version = integer(j, "version", 1).value_or(1);
  e.turns = integer(j, "turns").value_or(0);
  e.llm = str(j, "llm");
}

void to_json(json& j, const MessageEvent& e) {
  j = {{"type", MessageEvent::kType}, {"message", e.message}};
  if (e.reply) {
    const ReplyFacts& r = *e.reply;
    if (r.turn) j["turn"] = *r.turn;
    j["stop_reason"] = r.stop_reason;
    j["input_tokens"] = r.usage.input_tokens;
    j["output_tokens"] = r.usage.output_tokens;
    j["tokens_estimated"] = r.usage.estimated;
    j["latency_s"] = r.latency_s;
    j["attempts"] = r.attempts;
    j["empty"] = r.empty;
  }
  if (e.tool) {
    j["record"] = e.tool->record;
    j["malformed"] = e.tool->malformed;
  }
}
void from_json(const json& j, MessageEvent& e) {
  e.message = j.at("message").get<llm::Message>();
  e.reply.reset();
  e.tool.reset();
  for (const char* key : kReplyKeys) {
    if (!j.contains(key)) continue;
    ReplyFacts r;
    r.turn = integer(j, "turn", 0);
    r.stop_reason = str(j, "stop_reason");
    r.usage = {json_count(j.value("input_tokens", json())), json_count(j.value("output_tokens", json())),
               flag(j, "tokens_estimated")};
    r.latency_s = number(j, "latency_s");
    r.attempts = integer(j, "attempts").value_or(0);
    r.empty = flag(j, "empty");
    e.reply = r;
    break;
  }
  if (j.contains("record") || j.contains("malformed"))
    e.tool = ToolResultFacts{j.value("record", json()), flag(j, "malformed")};
}

void to_json(json& j, const EndpointErrorEvent& e) {
  j = {{"type", EndpointErrorEvent::kType}, {"turn", e.turn}, {"exit_code", e.exit_code}, {"message", e.message}};
}
void from_json(const json& j, EndpointErrorEvent& e) {
  e.turn = integer(j, "turn").value_or(0);
  e.exit_code = integer(j, "exit_code").value_or(0);
  e.message = str(j, "message");
}

void to_json(json& j, const EvaluationEvent& e) {
  j = {{"type", EvaluationEvent::kType}, {"score", e.score}, {"best", e.best}, {"report", e.report}};
}
void from_json(const json& j, EvaluationEvent& e) {
  e.score = j.at("score").get<CandidateScore>();
  e.best = j.value("best", false);
  e.report = j.value("report", json::object());
}

void to_json(json& j, const SessionEndEvent& e) {
  j = {{"type", SessionEndEvent::kType}, {"wall_s", e.wall_s}};
}
void from_json(const json& j, SessionEndEvent& e) {
  e.wall_s = j.value("wall_s", 0.0);
}

void to_json(json& j, const StopEvent& e) {
  j = {{"type", StopEvent::kType}, {"reason", e.reason}, {"turns", e.turns}};
}
void from_json(const json& j, StopEvent& e) {
  e.reason = j.value("reason", "");
  e.turns = integer(j, "turns").value_or(0);
}

TranscriptEvent parse_event(const json& line) {
  const std::string type = line.is_object() ? line.value("type", "") : "";
  if (type == StartEvent::kType) return line.get<StartEvent>();
  if (type == ResumeEvent::kType) return line.get<ResumeEvent>();
  if (type == MessageEvent::kType) return line.get<MessageEvent>();
  if (type == EndpointErrorEvent::kType) return line.get<EndpointErrorEvent>();
  if (type == EvaluationEvent::kType) return line.get<EvaluationEvent>();
  if (type == SessionEndEvent::kType) return line.get<SessionEndEvent>();
  if (type == StopEvent::kType) return line.get<StopEvent>();
  return OtherEvent{line};
}

std::vector<TranscriptEvent> parse_events(const std::vector<json>& lines) {
  std::vector<TranscriptEvent> out;
  out.reserve(lines.size());
  for (const auto& l : lines) out.push_back(parse_event(l));
  return out;
}

int check_transcript_version(const std::vector<json>& lines, const std::filesystem::path& path) {
  int version = 1;  // transcripts from before versions were recorded
  for (const auto& l : lines) {
    if (!l.is_object() || !l.contains("version")) continue;
    const std::string type = l.value("type", "");
    if (type != StartEvent::kType && type != ResumeEvent::kType) continue;
    const auto v = json_integer(l["version"], 1, INT_MAX);
    if (!v)
      throw InputError(fmt::format("{}: a {} event's version is {}, not a positive integer", path.string(), type,
                                   l["version"].dump()));
    if (*v > kTranscriptVersion)
      throw InputError(fmt::format(
          "{}: transcript version {} is newer than this kagent reads (version {}); use the kagent that wrote it",
          path.string(), *v, kTranscriptVersion));
    version = std::max(version, static_cast<int>(*v));
  }
  return version;
}

}  // namespace kagent::agent
