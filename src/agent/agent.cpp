#include "kagent/agent/agent.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/agent/nudges.hpp"
#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/common/utf8.hpp"
#include "kagent/llm/http.hpp"
#include "kagent/llm/tool_call_text.hpp"
#include "kagent/model_tools/tool_call.hpp"

namespace kagent::agent {

namespace {

using Clock = std::chrono::steady_clock;
using llm::Message;
using llm::Role;

// Whether the conversation holds a reply of the model (else it is the opening alone).
bool has_reply(const std::vector<Message>& messages) {
  for (const auto& m : messages)
    if (m.role == Role::assistant) return true;
  return false;
}

}  // namespace

RunState RunState::from_transcript(const std::vector<nlohmann::json>& events) {
  RunState s;
  for (auto& event : parse_events(events)) {
    if (auto* m = std::get_if<MessageEvent>(&event)) {
      if (m->message.role == Role::assistant) {
        ++s.turns;
        ++s.requests;
        if (m->reply) s.usage += m->reply->usage;
      }
      s.messages.push_back(std::move(m->message));
    } else if (auto* end = std::get_if<SessionEndEvent>(&event)) {
      s.wall_s += end->wall_s;
    }
  }
  return s;
}

Agent::Agent(llm::Provider& provider, model_tools::ToolSet& tools, Transcript& transcript, RunRecord& record,
             AgentOptions options, std::function<void(const TurnStatus&)> on_turn)
    : provider_(provider),
      tools_(tools),
      transcript_(transcript),
      record_(record),
      opt_(options),
      on_turn_(std::move(on_turn)),
      budget_(options.context_tokens, options.reply_tokens, options.context_chars),
      window_source_(options.context_source) {}

// Runs one call (model_tools/tool_call.hpp: the same text a session of `kagent serve` gives) and
// writes its result to the transcript.
Message Agent::run_tool_call(const llm::ToolCall& call, bool& malformed, bool& finished, std::string& summary) {
  // At most a quarter of the window's bytes: one result must not crowd out the rest.
  const size_t cap = std::min(opt_.tool_output_cap, std::max<size_t>(budget_.limit_bytes() / 4, 2048));
  model_tools::CallOutcome o = model_tools::run_tool_call(tools_, call, deadline_, cap);
  malformed = o.malformed;
  if (o.finished) finished = true;
  if (o.tier) last_tier_ = *o.tier;
  std::string target =
      call.arguments.is_object() && call.arguments.contains("path") && call.arguments["path"].is_string()
          ? " " + call.arguments["path"].get<std::string>()
          : "";
  summary += (summary.empty() ? "" : ", ") + call.name + target;
  transcript_.write(MessageEvent{o.message, std::nullopt, ToolResultFacts{o.record, o.malformed}});
  return std::move(o.message);
}

// A call past max_tool_calls in one reply: answered (both APIs need a result for every call id),
// not run.
Message Agent::not_run(const llm::ToolCall& call, size_t calls_in_reply) {
  Message out;
  out.role = Role::tool;
  out.tool_call_id = call.id;
  out.tool_name = call.name;
  out.is_error = true;
  out.content = fmt::format(
      "error: not run: this reply made {} tool calls and kagent runs only the first {} of a reply "
      "(--max-tool-calls); make this call again in a later turn if it is still needed",
      calls_in_reply, opt_.max_tool_calls);
  llm::make_valid_utf8_message(out);
  transcript_.write(MessageEvent{out, std::nullopt, ToolResultFacts{nlohmann::json(), false}});
  return out;
}

// The opening alone over the window: what it holds, what the window holds, and what to do.
std::string Agent::opening_does_not_fit(const ContextBudget& b, bool server_counted, size_t opening_bytes,
                                        const std::string& server_said) const {
  const size_t bytes = opening_bytes + tool_bytes_;
  const int64_t need = b.tokens(bytes) + b.reply_tokens() + b.margin_tokens();
  return fmt::format(
      "the opening prompt does not fit the model's context window: it is {} bytes (system prompt, skills and "
      "task) plus {} bytes of tool schemas, about {} tokens at {:.1f} bytes a token{}, and the window of {} tokens "
      "({}) leaves {} for it after {} for the reply and a margin of {}{}. Serve the model with a larger window "
      "(vLLM --max-model-len, llama-server -c, Ollama num_ctx; the opening alone needs about {} tokens, and 32768 "
      "or more leaves room to work) and give --context-tokens N if kagent cannot read it from the server, or "
      "shorten the opening with --prompts DIR or --skills DIR (a shorter skill)",
      opening_bytes, tool_bytes_, b.tokens(bytes), 1.0 / b.tokens_per_byte(),
      server_counted ? " (as the server counted)" : " (kagent's estimate)", b.window(),
      window_source_.empty() ? "as given" : window_source_, b.input_tokens(), b.reply_tokens(), b.margin_tokens(),
      server_said.empty() ? "" : "; the server said: " + server_said, need);
}

bool Agent::ask(std::vector<Message>& messages, llm::ChatRequest& rq, llm::ChatResponse& reply,
                std::string& stop_reason, int turn) {
  compact_conversation(messages, budget_.limit_bytes(), tool_bytes_);
  rq.messages = messages;
  rq.max_tokens = budget_.reply_tokens();
  for (int attempt = 0;; ++attempt) {
    size_t sent = tool_bytes_;
    for (const auto& m : rq.messages) sent += message_bytes(m);
    try {
      reply = provider_.chat(rq);
      if (!reply.usage.estimated) budget_.learn(sent, reply.usage.input_tokens);
      return true;
    } catch (const llm::DeadlinePassed&) {
      // The budget ended while the model was still answering (or the server only sent keep-alives).
      stop_reason = "time budget";
      return false;
    } catch (const llm::ContextExceeded& e) {
      // The server counts differently than kagent did: learn its figures and compact to well under
      // the request it refused, once.
      const int64_t window_before = budget_.window();
      budget_.learn(e.facts(), sent);
      if (budget_.window() != window_before) window_source_ = "as the server's refusal stated";
      size_t after = sent;
      if (attempt == 0) {
        const size_t target = std::min(budget_.limit_bytes(), sent - sent / 4);
        after = compact_conversation(messages, target, tool_bytes_);
      }
      if (!has_reply(messages)) {
        transcript_.write(EndpointErrorEvent{turn, static_cast<int>(e.code()), e.what()});
        throw InputError(
            opening_does_not_fit(budget_, e.facts().prompt_tokens.has_value(), sent - tool_bytes_, e.what()));
      }
      if (attempt == 0 && after < sent) {
        spdlog::warn(
            "the server refused the request as over the model's context window; kagent compacted the "
            "conversation from {} to {} bytes and asks again ({})",
            sent, after, e.what());
        rq.messages = messages;
        rq.max_tokens = budget_.reply_tokens();
        continue;
      }
      // The run stops here, resumable: the transcript holds the whole conversation.
      transcript_.write(EndpointErrorEvent{turn, static_cast<int>(e.code()), e.what()});
      spdlog::error(
          "{}; kagent compacted the conversation and asked again, and it is still over the window. The run stops "
          "(\"context window full\") and can be continued with kagent optimize --resume <run folder> against a "
          "larger window (serve the model with more context, and give --context-tokens N if kagent cannot read "
          "it), or with a smaller --context-tokens so that kagent compacts more",
          e.what());
      stop_reason = "context window full";
      return false;
    } catch (const Error& e) {
      // Ctrl-C (optimize_run.cpp's handler): the run ends as any stop does, its result written and
      // the folder resumable.
      if (llm::cancel_flag().load()) {
        stop_reason = "cancelled";
        return false;
      }
      // Unrecoverable endpoint errors end the run (exit 2/3; the folder stays resumable): the
      // transcript says why, not only stderr. The provider's messages have the key redacted.
      transcript_.write(EndpointErrorEvent{turn, static_cast<int>(e.code()), e.what()});
      throw;
    }
  }
}

RunResult Agent::run(RunState state) {
  const auto t0 = Clock::now();
  auto minutes = [&] { return (state.wall_s + std::chrono::duration<double>(Clock::now() - t0).count()) / 60.0; };
  // Tool calls stop at the budget's end too. Clamped: a budget of 1e300 minutes must not overflow
  // the clock (10^9 s is over 30 years).
  double left_s = opt_.max_minutes * 60.0 - state.wall_s;
  left_s = left_s > 0 ? std::min(left_s, 1e9) : 0.0;  // NaN too: no time
  deadline_ = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(left_s));
  std::vector<llm::ToolSpec> specs;
  std::vector<std::string> tool_names;
  for (auto& t : tools_) {
    specs.push_back(t->spec());
    tool_names.push_back(specs.back().name);
  }
  // Text from files (a task, a KernelBench source) and from an older transcript: valid UTF-8 too.
  for (Message& m : state.messages) llm::make_valid_utf8_message(m);
  const size_t max_calls = static_cast<size_t>(std::max(opt_.max_tool_calls, 1));
  tool_bytes_ = tool_spec_bytes(specs);
  // The opening alone (what no compaction shortens) must fit before anything is sent; counted at 4
  // bytes a token, so that only an opening surely over the window is refused (the server's own
  // refusal of the first request says so too).
  {
    size_t opening = 0;
    for (const auto& m : state.messages) {
      if (m.role == Role::assistant) break;
      opening += message_bytes(m);
    }
    ContextBudget at_4_bytes(opt_.context_tokens, opt_.reply_tokens, 0);
    at_4_bytes.learn(4, 1);
    if (opt_.context_tokens > 0 && at_4_bytes.tokens(opening + tool_bytes_) > at_4_bytes.input_tokens())
      throw InputError(opening_does_not_fit(at_4_bytes, false, opening, ""));
  }
  RunResult res;
  int malformed_in_a_row = 0;
  int empty_in_a_row = 0;  // replies with neither text nor a tool call: a model that has stopped working

  // A run killed between the model's reply and the last of its tool results: finish that turn
  // (calls past the limit are answered as they would have been).
  bool finished = false;
  std::string turn_summary;
  record_.set_turn(state.turns);  // evaluations count in the turn of the reply that asked for them
  for (size_t i = state.messages.size(); i-- > 0;) {
    if (state.messages[i].role != Role::assistant) continue;
    const std::vector<llm::ToolCall> calls = state.messages[i].tool_calls;
    std::set<std::string> answered;
    for (size_t k = i + 1; k < state.messages.size(); ++k)
      if (state.messages[k].role == Role::tool) answered.insert(state.messages[k].tool_call_id);
    for (size_t n = 0; n < calls.size(); ++n) {
      if (answered.count(calls[n].id)) continue;
      bool bad = false;
      state.messages.push_back(n < max_calls ? run_tool_call(calls[n], bad, finished, turn_summary)
                                             : not_run(calls[n], calls.size()));
    }
    break;
  }
  while (!finished) {
    if (state.turns >= opt_.max_turns) {
      res.stop_reason = "turn budget";
      break;
    }
    if (minutes() >= opt_.max_minutes) {
      res.stop_reason = "time budget";
      break;
    }
    if (opt_.max_tokens > 0 && saturating_add(state.usage.input_tokens, state.usage.output_tokens) >= opt_.max_tokens) {
      res.stop_reason = "token budget";
      break;
    }
    llm::ChatRequest rq;
    rq.tools = specs;
    rq.tool_choice = opt_.tool_choice;
    rq.deadline = deadline_;
    llm::ChatResponse reply;
    if (!ask(state.messages, rq, reply, res.stop_reason, state.turns + 1)) break;
    ++state.turns;
    record_.set_turn(state.turns);
    ++state.requests;
    state.usage += reply.usage;
    llm::make_valid_utf8_message(reply.message);  // whatever the provider passed on
    // A model served without native tool calling writes its calls into the text (Qwen's and
    // Hermes' <tool_call> blocks, a reply that is a JSON call): read from there, they run as
    // native calls do, and the conversation holds them as native calls from then on.
    std::vector<std::string> unreadable;
    if (reply.message.tool_calls.empty()) {
      llm::TextToolCalls in_text = llm::tool_calls_in_text(reply.message.content);
      if (!in_text.calls.empty() || !in_text.errors.empty()) {
        reply.message.tool_calls = std::move(in_text.calls);
        reply.message.content = std::move(in_text.text);
        unreadable = std::move(in_text.errors);
      }
    }
    const bool empty = unreadable.empty() && is_empty_reply(reply.message.content, reply.message.tool_calls.size());
    empty_in_a_row = empty ? empty_in_a_row + 1 : 0;
    transcript_.write(MessageEvent{
        reply.message, ReplyFacts{state.turns, reply.stop_reason, reply.usage, reply.latency_s, reply.attempts, empty},
        std::nullopt});
    state.messages.push_back(reply.message);

    turn_summary.clear();
    if (reply.message.tool_calls.empty() && !unreadable.empty()) {
      // Calls were meant but none could be read: a malformed turn, said so.
      Message nudge{Role::user, unreadable_calls_nudge(unreadable), {}, "", "", false};
      transcript_.write(MessageEvent{nudge, std::nullopt, std::nullopt});
      state.messages.push_back(nudge);
      turn_summary = "(unreadable tool calls)";
      ++malformed_in_a_row;
    } else if (reply.message.tool_calls.empty()) {
      // No tool call: the work happens through tools, so say so (not a malformed call, but a turn
      // spent). An empty reply gets the exact next step: a vague "continue" did not help there.
      std::optional<std::string> best_path;
      if (record_.best()) best_path = record_.best()->path;
      Message nudge{
          Role::user,
          empty ? empty_reply_nudge(tool_names, best_path, empty_in_a_row, opt_.max_empty) : text_only_nudge(),
          {},
          "",
          "",
          false};
      transcript_.write(MessageEvent{nudge, std::nullopt, std::nullopt});
      state.messages.push_back(nudge);
      turn_summary = empty ? "(empty reply)" : "(text only)";
    }
    const auto& calls = reply.message.tool_calls;
    for (size_t n = 0; n < calls.size() && n < max_calls; ++n) {
      bool bad = false;
      state.messages.push_back(run_tool_call(calls[n], bad, finished, turn_summary));
      malformed_in_a_row = bad ? malformed_in_a_row + 1 : 0;
    }
    for (size_t n = max_calls; n < calls.size(); ++n) state.messages.push_back(not_run(calls[n], calls.size()));
    if (calls.size() > max_calls) turn_summary += fmt::format(" (+{} calls not run)", calls.size() - max_calls);
    if (!calls.empty() && !unreadable.empty()) {  // some read, some not: the others said after the results
      Message nudge{Role::user, unreadable_calls_nudge(unreadable), {}, "", "", false};
      transcript_.write(MessageEvent{nudge, std::nullopt, std::nullopt});
      state.messages.push_back(nudge);
      ++malformed_in_a_row;
    }
    if (on_turn_) on_turn_({state.turns, opt_.max_turns, turn_summary, last_tier_, record_.best(), state.usage});
    if (empty_in_a_row >= opt_.max_empty) {
      res.stop_reason = fmt::format("{} empty replies in a row", empty_in_a_row);
      break;
    }
    if (malformed_in_a_row >= opt_.max_malformed) {
      res.stop_reason = fmt::format("{} malformed tool calls in a row", malformed_in_a_row);
      break;
    }
  }
  if (finished) res.stop_reason = "finish";
  res.turns = state.turns;
  res.requests = state.requests;
  res.usage = state.usage;
  res.wall_s = state.wall_s + std::chrono::duration<double>(Clock::now() - t0).count();
  res.best = record_.best();
  transcript_.write(SessionEndEvent{std::chrono::duration<double>(Clock::now() - t0).count()});
  transcript_.write(StopEvent{res.stop_reason, res.turns});
  return res;
}

}  // namespace kagent::agent
