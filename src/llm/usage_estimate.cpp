#include "kagent/llm/usage_estimate.hpp"

#include <algorithm>
#include <cmath>

#include "kagent/common/hash.hpp"
#include "kagent/common/saturate.hpp"

namespace kagent::llm {

namespace {

size_t message_bytes(const Message& m) {
  size_t n = m.content.size();
  for (const auto& c : m.tool_calls)
    n += c.name.size() +
         (c.raw_arguments.empty() && !c.arguments.is_null() ? c.arguments.dump().size() : c.raw_arguments.size());
  return n;
}

size_t tool_bytes(const std::vector<ToolSpec>& tools) {
  size_t n = 0;
  for (const auto& t : tools) n += t.name.size() + t.description.size() + t.parameters.dump().size();
  return n;
}

// Everything the model reads of a message, so that a changed message (a compacted tool result)
// breaks the prefix and the estimate falls back to the plain rule.
void add_message(Hasher& h, const Message& m) {
  h.add_field(role_name(m.role)).add_field(m.content).add_field(m.tool_call_id);
  for (const auto& c : m.tool_calls) h.add_field(c.id).add_field(c.name).add_field(c.raw_arguments);
}

std::string hash_of(const std::vector<Message>& messages, size_t count) {
  Hasher h;
  for (size_t i = 0; i < count && i < messages.size(); ++i) add_message(h, messages[i]);
  return h.hex();
}

std::string hash_of(const Message& m) {
  Hasher h;
  add_message(h, m);
  return h.hex();
}

int64_t tokens(size_t bytes, double per_byte) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * per_byte));
}

}  // namespace

Usage UsageEstimator::account(const ChatRequest& request, const Message& reply, const Usage& reported) {
  size_t request_bytes = tool_bytes(request.tools);
  for (const auto& m : request.messages) request_bytes += message_bytes(m);

  if (reported.input_tokens > 0 || reported.output_tokens > 0) {
    if (reported.input_tokens > 0 && request_bytes > 0)
      tokens_per_byte_ =
          std::clamp(static_cast<double>(reported.input_tokens) / static_cast<double>(request_bytes), 1.0 / 16, 1.0);
    known_ = Known{request.messages.size(), hash_of(request.messages, request.messages.size()), hash_of(reply),
                   saturating_add(reported.input_tokens, reported.output_tokens)};
    return reported;
  }

  Usage u;
  u.estimated = true;
  u.output_tokens = tokens(message_bytes(reply), tokens_per_byte_);
  const bool continues = known_ && request.messages.size() > known_->messages &&
                         hash_of(request.messages[known_->messages]) == known_->reply_hash &&
                         hash_of(request.messages, known_->messages) == known_->prefix_hash;
  if (continues) {
    size_t after = 0;
    for (size_t i = known_->messages + 1; i < request.messages.size(); ++i) after += message_bytes(request.messages[i]);
    u.input_tokens = saturating_add(known_->tokens, tokens(after, tokens_per_byte_));
  } else {
    u.input_tokens = tokens(request_bytes, tokens_per_byte_);
  }
  return u;
}

}  // namespace kagent::llm
