#pragma once
// The model's context window: how many tokens one request (conversation plus reply) may hold.
// The agent loop sizes every request to it (agent/agent_context.hpp).
//
// Where it comes from, first found wins:
//  - the user: --context-tokens N, or llm.context_tokens in an op.json or the config file;
//  - the server, asked once with a short timeout (an OpenAI-compatible base URL other than
//    api.openai.com): vLLM's and SGLang's GET {base}/models `max_model_len` of the model;
//    llama.cpp's GET {root}/props `default_generation_settings.n_ctx` (a slot's window), else its
//    `n_ctx`; Ollama's (a server whose GET {root}/api/version answers) POST {root}/api/show
//    `num_ctx` parameter, else GET {root}/api/ps
//    `context_length` of the loaded model, else Ollama's smallest default (4096, at most the
//    model's `*.context_length`); LM Studio's GET {root}/api/v0/models/{model}
//    `loaded_context_length`. {root} is the base URL less a trailing /v1.
//  - a default: Anthropic 200000 (every current Claude model), api.openai.com 128000 (the smallest
//    window of its current chat models), any other server 32768, scripts too.
//
// The server's own refusal of a request as too long (context_refusal) is how the agent loop
// learns that its count was off: it compacts harder and asks once more.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "kagent/llm/config.hpp"

namespace kagent::llm {

inline constexpr int64_t kDefaultContextTokens = 32768;
inline constexpr int64_t kAnthropicContextTokens = 200000;
inline constexpr int64_t kOpenAiContextTokens = 128000;
inline constexpr int64_t kOllamaDefaultContextTokens = 4096;

struct ContextWindow {
  int64_t tokens = 0;
  // Where the figure came from, for people: "flag", "config file ...", "vLLM /v1/models
  // max_model_len", "default for an OpenAI-compatible server that did not say", ...
  std::string source;
  // Why the server could not be asked, or what it said that was no window ("" when it told).
  std::string probe_note;
};

// Never throws: a server that does not answer within `timeout` per request gives the default.
ContextWindow find_context_window(const LlmConfig& config,
                                  std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));

// A server's answer that the request is over its context window, and the figures it gave.
struct ContextRefusal {
  std::optional<int64_t> window;         // the window it said it has
  std::optional<int64_t> prompt_tokens;  // the tokens it counted in the refused request's input
};

// Whether an HTTP error answer is a context-window refusal: OpenAI's "maximum context length" /
// context_length_exceeded, vLLM's (also "longer than the maximum model length", "is too long and
// exceeds limit"), SGLang's "longer than the model's context length", llama.cpp's "exceeds the
// available context size" (exceed_context_size_error, with n_prompt_tokens and n_ctx),
// llama-cpp-python's "exceed context window", LM Studio's "context length of only" / n_keep
// against n_ctx, TGI's "`max_new_tokens` must be <=", Anthropic's "prompt is too long" and
// "exceed context limit". Ollama says nothing: it cuts the prompt silently, which the window above
// prevents.
std::optional<ContextRefusal> context_refusal(long status, const std::string& body);

}  // namespace kagent::llm
