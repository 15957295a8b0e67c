#include "kagent/llm/probe.hpp"

#include <fmt/format.h>

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
    r.detail = fmt::format(
        "{} in {:.2f} s, {} + {} tokens{}; {}", provider.name(), resp.latency_s, resp.usage.input_tokens,
        resp.usage.output_tokens, resp.usage.estimated ? " (estimated: the server sent no usage)" : "",
        r.tool_called ? "tool calling works"
                      : "answered without calling the offered tool (is tool calling enabled on the server?)");
  } catch (const std::exception& e) {
    r.detail = e.what();  // providers' errors never hold the key
  }
  return r;
}

}  // namespace kagent::llm
