#include "kagent/serve/session_request.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "json_fields.hpp"
#include "kagent/llm/tool_call_text.hpp"

namespace kagent::serve {

const char* reward_rule_name(RewardRule r) {
  switch (r) {
    case RewardRule::tier:
      return "tier";
    case RewardRule::best_tier:
      return "best_tier";
    case RewardRule::log_speedup:
      return "log_speedup";
  }
  return "tier";
}

namespace {

void read_limits(const Json& j, const std::string& field, const SessionLimits& most, SessionLimits& l) {
  Fields f(j, field);
  if (auto v = f.integer("steps", 1, most.steps)) l.steps = *v;
  if (auto v = f.number("wall_s", 1, most.wall_s)) l.wall_s = *v;
  if (auto v = f.number("call_s", 1, most.call_s)) l.call_s = *v;
  if (auto v = f.integer("observation_bytes", 1024, static_cast<int>(most.observation_bytes)))
    l.observation_bytes = static_cast<size_t>(*v);
  if (auto v = f.integer("evaluations", 0, most.evaluations)) l.evaluations = *v;
  if (auto v = f.integer("workspace_mb", 1, static_cast<int>(most.workspace_bytes >> 20)))
    l.workspace_bytes = static_cast<size_t>(*v) << 20;
  f.unknown();
}

llm::ToolCall read_call(const Json& j, const std::string& field) {
  Fields f(j, field);
  llm::ToolCall c;
  c.id = f.string("id", false, 256);
  c.name = f.string("name", true, 256);
  if (c.name.empty()) bad(f.name("name"), "empty");
  if (const Json* a = f.get("arguments")) {
    // An object is the arguments; a string is their JSON text (OpenAI's form), read as a
    // provider's are: what does not hold an object is the call's arguments_error, for the model.
    c.raw_arguments = a->is_string() ? a->get<std::string>() : a->dump();
  }
  f.unknown();
  llm::complete_tool_call(c);
  return c;
}

}  // namespace

OpenSessionRequest parse_open_session(std::string_view body, const RequestLimits& limits, const SessionLimits& most) {
  const Json j = parse_body(body, limits);
  Fields f(j, "");
  OpenSessionRequest r;
  r.problem = f.string("problem", true, 4096);
  if (r.problem.empty()) bad("problem", "empty");
  read_judging(f, limits, r.judging);
  r.limits = most;
  // The defaults, within what the service allows.
  const SessionLimits defaults;
  r.limits.steps = std::min(defaults.steps, most.steps);
  r.limits.wall_s = std::min(defaults.wall_s, most.wall_s);
  r.limits.call_s = std::min(defaults.call_s, most.call_s);
  r.limits.observation_bytes = std::min(defaults.observation_bytes, most.observation_bytes);
  r.limits.evaluations = std::min(defaults.evaluations, most.evaluations);
  r.limits.workspace_bytes = std::min(defaults.workspace_bytes, most.workspace_bytes);
  if (const Json* l = f.get("limits")) read_limits(*l, "limits", most, r.limits);
  if (const std::string rule = f.string("reward", false, 64); !rule.empty()) {
    bool known = false;
    for (RewardRule x : {RewardRule::tier, RewardRule::best_tier, RewardRule::log_speedup})
      if (rule == reward_rule_name(x)) {
        r.reward = x;
        known = true;
      }
    if (!known)
      bad("reward", fmt::format("{}: expected \"tier\", \"best_tier\" or \"log_speedup\"", show_json(Json(rule))));
  }
  if (auto v = f.boolean("shell")) r.shell = *v;
  r.kind = f.string("kind", false, 64);
  if (!r.kind.empty() &&
      std::find(std::begin(kEpisodeKinds), std::end(kEpisodeKinds), r.kind) == std::end(kEpisodeKinds)) {
    std::string known;
    for (std::string_view k : kEpisodeKinds) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", k);
    bad("kind",
        fmt::format("{}: an episode takes the candidates its prompts teach: {}", show_json(Json(r.kind)), known));
  }
  // Evaluation inputs are drawn from the OS for every evaluation, so that no candidate can replay
  // them; an episode has no other randomness for a seed to fix.
  if (f.get("seed"))
    bad("seed",
        "an episode has nothing to seed: every evaluation draws fresh inputs from the OS (so that no "
        "candidate can replay them) and the trainer samples the model");
  f.unknown();
  return r;
}

StepRequest parse_step(std::string_view body, const RequestLimits& limits) {
  const Json j = parse_body(body, limits);
  Fields f(j, "");
  const Json* one = f.get("tool_call");
  const Json* many = f.get("tool_calls");
  const Json* text = f.get("text");
  f.unknown();
  const int given = (one ? 1 : 0) + (many ? 1 : 0) + (text ? 1 : 0);
  if (given != 1)
    bad("body", given == 0 ? "expected one of \"tool_call\", \"tool_calls\" or \"text\""
                           : "give one of \"tool_call\", \"tool_calls\" or \"text\", not several");
  StepRequest s;
  if (one) {
    s.calls.push_back(read_call(*one, "tool_call"));
  } else if (many) {
    if (!many->is_array()) bad("tool_calls", fmt::format("expected an array, got {}", show_json(*many)));
    if (many->empty()) bad("tool_calls", "empty");
    if (many->size() > kMaxStepCalls)
      bad("tool_calls", fmt::format("{} calls, over the limit of {} a step", many->size(), kMaxStepCalls));
    for (size_t i = 0; i < many->size(); ++i)
      s.calls.push_back(read_call((*many)[i], fmt::format("tool_calls[{}]", i)));
  } else {
    if (!text->is_string()) bad("text", fmt::format("expected a string, got {}", show_json(*text)));
    llm::TextToolCalls read = llm::tool_calls_in_text(text->get<std::string>());
    s.from_text = true;
    s.text = std::move(read.text);
    s.calls = std::move(read.calls);
    s.unreadable = std::move(read.errors);
  }
  // Ids the client did not give are made distinct within the step (complete_tool_call numbers them).
  return s;
}

}  // namespace kagent::serve
