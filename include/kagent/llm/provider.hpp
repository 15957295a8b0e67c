#pragma once
// A model endpoint as the agent loop sees it: one call, a conversation in, an assistant message
// (text and/or tool calls) out. Providers translate kagent's neutral messages (message.hpp) to
// their wire format and back, over HttpClient (retries, timeouts, cancellation).
//
// Failures are exceptions with exit codes (common/error.hpp): an endpoint that cannot be reached
// or keeps failing after the retries, or a rejected key (401/403), is EnvError (exit 3); a request
// the server refuses for good (400 with its message, 404 model not found) is InputError (exit 2);
// a refusal because the request is over the context window is ContextExceeded (an InputError).
// Messages never contain the API key. A reply larger than HttpOptions::max_reply_bytes is abandoned
// and is EnvError too (never retried). A request cut at ChatRequest::deadline is DeadlinePassed.
#include <memory>
#include <string>

#include "kagent/common/error.hpp"

#include "kagent/llm/config.hpp"
#include "kagent/llm/context_window.hpp"
#include "kagent/llm/message.hpp"

namespace kagent::llm {

// The run's time budget ran out while a request was in flight (ChatRequest::deadline): the agent
// loop stops with "time budget"; anywhere else it is an environment error like a timeout.
class DeadlinePassed : public EnvError {
 public:
  using EnvError::EnvError;
};

// The server refused the request as longer than its context window (context_window.hpp's
// context_refusal): the agent loop compacts the conversation and asks again; anywhere else it is
// the InputError it derives from (exit 2, the server's words in the message).
class ContextExceeded : public InputError {
 public:
  ContextExceeded(const std::string& what, ContextRefusal facts) : InputError(what), facts_(facts) {}
  const ContextRefusal& facts() const { return facts_; }

 private:
  ContextRefusal facts_;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual ChatResponse chat(const ChatRequest& request) = 0;
  virtual std::string name() const = 0;  // "openai", "anthropic", "script"
};

std::unique_ptr<Provider> make_provider(const LlmConfig& config);

}  // namespace kagent::llm
