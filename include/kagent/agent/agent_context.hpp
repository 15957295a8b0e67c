#pragma once
// Keeping each request within the model's context window (llm/context_window.hpp says where the
// window comes from). The window is in tokens and kagent has no tokenizer, so requests are
// measured in bytes (messages' text, tool calls' names and arguments, the tool schemas) and
// converted at this model's rate: the tokens the server reported for a request's input over that
// request's bytes, the highest rate seen in the run (a server that reports fewer tokens for a
// cached prefix never lowers it), else 3 bytes a token (code and JSON run denser than English).
// Each request leaves room for the reply (max_tokens, at most a quarter of the window) and a
// margin of a twentieth of the window.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kagent/llm/context_window.hpp"
#include "kagent/llm/message.hpp"

namespace kagent::agent {

// Bytes of what a request sends of a message, and of a whole request.
size_t message_bytes(const llm::Message& m);
size_t tool_spec_bytes(const std::vector<llm::ToolSpec>& tools);

class ContextBudget {
 public:
  // window_tokens 0: no window (only cap_bytes bounds the conversation); cap_bytes 0: no cap.
  ContextBudget(int64_t window_tokens, int reply_tokens, size_t cap_bytes);

  // max_tokens of each request: the configured reply, at most a quarter of the window.
  int reply_tokens() const;
  int64_t margin_tokens() const;
  // The tokens a request's input may hold: the window less the reply and the margin.
  int64_t input_tokens() const;
  // Bytes of a request (messages and tool schemas) that fit; SIZE_MAX when nothing bounds them.
  size_t limit_bytes() const;
  // `bytes` of a request in tokens at the learnt rate (or at `tokens_per_byte` when given).
  int64_t tokens(size_t bytes) const;
  double tokens_per_byte() const { return tokens_per_byte_; }
  bool measured() const { return measured_; }  // the rate came from the server's figures

  // A reply's real input tokens for a request of `request_bytes`.
  void learn(size_t request_bytes, int64_t input_tokens);
  // A refusal's figures: the window it states (when smaller) and the tokens it counted.
  void learn(const llm::ContextRefusal& refusal, size_t request_bytes);

  int64_t window() const { return window_; }

 private:
  int64_t window_;
  int reply_;
  size_t cap_;
  double tokens_per_byte_ = 1.0 / 3;
  bool measured_ = false;
};

// Shrinks the conversation until `tool_bytes` plus its bytes are within `limit_bytes`, in this
// order, each step only while still over: old tool results become one-line summaries (kept whole:
// the last 6 messages and each candidate's latest evaluation); old tool calls' long string
// arguments (a whole kernel source given to write_file) and long replies are elided; the kept
// evaluations are summarised; the recent tool results are cut in the middle (head and tail kept,
// never below 1 KiB), then summarised. The opening (every message before the model's first reply)
// is never touched. Returns the bytes of the request afterwards (tool schemas included), which may
// still be over the limit when the opening and the latest turn alone are.
size_t compact_conversation(std::vector<llm::Message>& messages, size_t limit_bytes, size_t tool_bytes);

}  // namespace kagent::agent
