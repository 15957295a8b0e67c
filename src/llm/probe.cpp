#include "kagent/llm/probe.hpp"

#include <fmt/format.h>

#include "kagent/llm/tool_call_text.hpp"

namespace kagent::llm {

ProbeResult probe_tool_calling(Provider& provider) {
  ChatRequest rq;
  rq.max_tokens = 64;
  rq.temperature = 0.0;
  rq.messages.push_back({Role::user,
                         "Call the `ping` tool with the argument word set to \"kagent\". Do not answer in text.",
                         {},
                         "",
                         "",
                         false});
  rq.tools.push_back({"ping",
                      "Replies pong. Call it when asked to.",
                      {{"type", "object"},
                       {"properties", {{"word", {{"type", "string"}}}}},
                       {"required", nlohmann::json::array({"word"})}}});
  ProbeResult r;
  try {
    ChatResponse resp = provider.chat(rq);
    r.answered = true;
    for (const auto& c : resp.message.tool_calls)
      if (c.name == "ping" && c.arguments_error.empty()) r.tool_called = true;
    // Tool calling off on the server, the model writing its calls as text: the agent loop reads
    // those (tool_call_text.hpp), so the endpoint works, said as such.
    bool in_text = false;
    if (!r.tool_called && resp.message.tool_calls.empty())
      for (const auto& c : tool_calls_in_text(resp.message.content).calls)
        if (c.name == "ping" && c.arguments_error.empty()) in_text = r.tool_called = true;
    r.detail = fmt::format(
        "{} in {:.2f} s, {} + {} tokens{}; {}", provider.name(), resp.latency_s, resp.usage.input_tokens,
        resp.usage.output_tokens, resp.usage.estimated ? " (estimated: the server sent no usage)" : "",
        in_text         ? "the model wrote its tool call as text (kagent reads it; the server's tool calling is off)"
        : r.tool_called ? "tool calling works"
                        : "answered without calling the offered tool (is tool calling enabled on the server?)");
  } catch (const std::exception& e) {
    r.detail = e.what();  // providers' errors never hold the key
  }
  return r;
}

}  // namespace kagent::llm
