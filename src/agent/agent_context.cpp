#include "kagent/agent/agent_context.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "kagent/common/utf8.hpp"
#include "kagent/model_tools/tool.hpp"

namespace kagent::agent {

namespace {

using llm::Message;
using llm::Role;

constexpr size_t kRecentMessages = 6;  // kept whole while older ones can give way
constexpr size_t kLongArgument = 512;  // a tool-call string argument longer than this can be elided
constexpr size_t kLongReply = 1024;    // a reply's text longer than this can be elided
constexpr size_t kSmallestCut = 1024;  // a recent tool result is never cut below this
constexpr double kMinTokensPerByte = 1.0 / 16, kMaxTokensPerByte = 1.0;

size_t arguments_bytes(const llm::ToolCall& c) {
  return c.raw_arguments.empty() && !c.arguments.is_null() ? c.arguments.dump().size() : c.raw_arguments.size();
}

size_t total(const std::vector<Message>& messages) {
  size_t n = 0;
  for (const auto& m : messages) n += message_bytes(m);
  return n;
}

bool elided(const std::string& s) {
  return s.rfind("[elided", 0) == 0;
}

// The most of a summary's quoted line: the first non-blank line of what it replaces.
constexpr size_t kQuotedLineBytes = 160;

void summarise_result(Message& m) {
  if (elided(m.content)) return;
  m.content = fmt::format("[elided to save context: {} bytes of {} output; it began: {}]", m.content.size(),
                          m.tool_name, first_line(m.content, kQuotedLineBytes));
}

// A call's long string arguments (write_file's content, edit_file's texts) give way to a note; the
// rest (the path) stays, and the arguments stay a JSON object.
void elide_arguments(llm::ToolCall& c) {
  if (arguments_bytes(c) <= kLongArgument) return;
  nlohmann::json args = c.arguments;
  if (!args.is_object()) {
    args = {{"elided", fmt::format("{} bytes of arguments that were not a JSON object", arguments_bytes(c))}};
  } else {
    for (auto& [key, value] : args.items())
      if (value.is_string() && value.get<std::string>().size() > kLongArgument)
        value = fmt::format("[elided to save context: {} bytes]", value.get<std::string>().size());
  }
  std::string raw = args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (raw.size() >= arguments_bytes(c)) return;
  c.arguments = std::move(args);
  c.raw_arguments = std::move(raw);
}

void elide_reply(Message& m) {
  for (auto& c : m.tool_calls) elide_arguments(c);
  if (m.content.size() > kLongReply && !elided(m.content))
    m.content = fmt::format("[elided to save context: {} bytes of your reply; it began: {}]", m.content.size(),
                            first_line(m.content, kQuotedLineBytes));
}

}  // namespace

size_t message_bytes(const Message& m) {
  size_t n = m.content.size();
  for (const auto& c : m.tool_calls) n += c.name.size() + arguments_bytes(c);
  return n;
}

size_t tool_spec_bytes(const std::vector<llm::ToolSpec>& tools) {
  size_t n = 0;
  for (const auto& t : tools) n += t.name.size() + t.description.size() + t.parameters.dump().size();
  return n;
}

ContextBudget::ContextBudget(int64_t window_tokens, int reply_tokens, size_t cap_bytes)
    : window_(std::max<int64_t>(window_tokens, 0)), reply_(reply_tokens), cap_(cap_bytes) {}

int ContextBudget::reply_tokens() const {
  if (window_ <= 0) return reply_;
  return static_cast<int>(std::min<int64_t>(reply_, std::max<int64_t>(window_ / 4, 256)));
}

int64_t ContextBudget::margin_tokens() const {
  return window_ / 20;
}

int64_t ContextBudget::input_tokens() const {
  if (window_ <= 0) return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(window_ - reply_tokens() - margin_tokens(), 0);
}

size_t ContextBudget::limit_bytes() const {
  size_t limit = cap_ > 0 ? cap_ : std::numeric_limits<size_t>::max();
  if (window_ > 0)
    limit = std::min(limit, static_cast<size_t>(std::floor(static_cast<double>(input_tokens()) / tokens_per_byte_)));
  return limit;
}

int64_t ContextBudget::tokens(size_t bytes) const {
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * tokens_per_byte_));
}

void ContextBudget::learn(size_t request_bytes, int64_t input_tokens) {
  if (request_bytes == 0 || input_tokens <= 0) return;
  const double rate = std::clamp(static_cast<double>(input_tokens) / static_cast<double>(request_bytes),
                                 kMinTokensPerByte, kMaxTokensPerByte);
  tokens_per_byte_ = measured_ ? std::max(tokens_per_byte_, rate) : rate;
  measured_ = true;
}

void ContextBudget::learn(const llm::ContextRefusal& refusal, size_t request_bytes) {
  if (refusal.window && (window_ <= 0 || *refusal.window < window_)) window_ = *refusal.window;
  if (refusal.prompt_tokens) learn(request_bytes, *refusal.prompt_tokens);
}

size_t compact_conversation(std::vector<Message>& messages, size_t limit_bytes, size_t tool_bytes) {
  auto size = [&] { return tool_bytes + total(messages); };
  if (size() <= limit_bytes) return size();

  // The opening: every message before the model's first reply.
  size_t opening = 0;
  while (opening < messages.size() && messages[opening].role != Role::assistant) ++opening;
  const size_t recent = std::max(opening, messages.size() >= kRecentMessages ? messages.size() - kRecentMessages : 0);

  // Each candidate's latest evaluation: what the model needs to compare versions.
  std::vector<bool> latest_eval(messages.size(), false);
  {
    std::map<std::string, size_t> latest;  // path -> index of its latest evaluate result
    std::map<std::string, std::string> call_path;
    for (size_t i = 0; i < messages.size(); ++i) {
      for (const auto& c : messages[i].tool_calls)
        if (c.name == "evaluate" && c.arguments.is_object() && c.arguments.contains("path"))
          call_path[c.id] = c.arguments["path"].dump();
      if (messages[i].role == Role::tool && call_path.count(messages[i].tool_call_id))
        latest[call_path[messages[i].tool_call_id]] = i;
    }
    for (const auto& [path, i] : latest) latest_eval[i] = true;
  }

  // 1. Old tool results, oldest first.
  for (size_t i = opening; i < recent && size() > limit_bytes; ++i)
    if (messages[i].role == Role::tool && !latest_eval[i]) summarise_result(messages[i]);
  // 2. Old replies' long arguments and text.
  for (size_t i = opening; i < recent && size() > limit_bytes; ++i)
    if (messages[i].role == Role::assistant) elide_reply(messages[i]);
  // 3. The old evaluations kept so far.
  for (size_t i = opening; i < recent && size() > limit_bytes; ++i)
    if (messages[i].role == Role::tool) summarise_result(messages[i]);
  // 4. The recent turns: replies' long arguments, then tool results cut in the middle, the
  //    largest first, to what the limit leaves.
  for (size_t i = recent; i < messages.size() && size() > limit_bytes; ++i)
    if (messages[i].role == Role::assistant) elide_reply(messages[i]);
  for (size_t round = 0; round < messages.size() && size() > limit_bytes; ++round) {
    size_t largest = messages.size();
    for (size_t i = recent; i < messages.size(); ++i)
      if (messages[i].role == Role::tool && !elided(messages[i].content) && messages[i].content.size() > kSmallestCut &&
          (largest == messages.size() || messages[i].content.size() > messages[largest].content.size()))
        largest = i;
    if (largest == messages.size()) break;
    std::string& text = messages[largest].content;
    const size_t over = size() - limit_bytes;
    const size_t target = text.size() > over + kSmallestCut ? text.size() - over : kSmallestCut;
    std::string cut = model_tools::cut_middle(text, target);
    if (cut.size() >= text.size()) break;
    text = std::move(cut);
  }
  // 5. The recent tool results, summarised, oldest first.
  for (size_t i = recent; i < messages.size() && size() > limit_bytes; ++i)
    if (messages[i].role == Role::tool) summarise_result(messages[i]);
  return size();
}

}  // namespace kagent::agent
