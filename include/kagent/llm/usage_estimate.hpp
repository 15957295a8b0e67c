#pragma once
// Token figures for a reply that carried none, so the token budget, the status lines and
// result.json never read a silent 0 (llama-cpp-python's streams carry no usage, although kagent
// asks for stream_options.include_usage). An estimate is marked (Usage::estimated).
//
// The rule, per provider (one provider serves one conversation):
//  - a request's bytes: its messages' text, tool-call names and arguments, and its tool specs'
//    JSON; a reply's bytes: its text, tool-call names and arguments.
//  - tokens per byte: from the latest reply that carried real figures (its input tokens over its
//    request's bytes, kept within [1/16, 1]), else 1/4 (about 4 bytes a token for code and English).
//  - input: when the request continues that reply's conversation (that request's messages, then
//    that reply, begin this one), its real input + output tokens plus the bytes after them times
//    the ratio; else all of the request's bytes times the ratio.
//  - output: the reply's bytes times the ratio, rounded up.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kagent/llm/message.hpp"

namespace kagent::llm {

class UsageEstimator {
 public:
  // `reported`: what the server said. Real figures (any count above 0) are returned as they are
  // and learned from; none at all come back estimated by the rule above.
  Usage account(const ChatRequest& request, const Message& reply, const Usage& reported);

 private:
  struct Known {
    size_t messages = 0;      // the request's message count
    std::string prefix_hash;  // of those messages
    std::string reply_hash;   // of the reply that answered them
    int64_t tokens = 0;       // its real input + output tokens
  };
  std::optional<Known> known_;
  double tokens_per_byte_ = 0.25;
};

}  // namespace kagent::llm
