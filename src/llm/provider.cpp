#include "kagent/llm/provider.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/llm/tool_choice.hpp"
#include "providers.hpp"

namespace kagent::llm {

namespace {

// The server's own words: OpenAI {"error": {"message"}}, Anthropic {"error": {"type", "message"}},
// some servers {"error": "text"} or {"detail": "text"}; else the start of the body.
std::string server_message(const std::string& body) {
  nlohmann::json j;
  try {
    j = parse_json<nlohmann::json>(body);
  } catch (const JsonTextError&) {
  }
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_string()) return e->get<std::string>();
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
        return (*e)["message"].get<std::string>();
    }
    if (auto d = j.find("detail"); d != j.end() && d->is_string()) return d->get<std::string>();
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  std::string text = body.substr(0, 300);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text.empty() ? "(empty body)" : text;
}

}  // namespace

std::unique_ptr<Provider> make_provider(const LlmConfig& config) {
  switch (config.provider) {
    case ProviderKind::openai:
      return make_openai_provider(config);
    case ProviderKind::anthropic:
      return make_anthropic_provider(config);
    case ProviderKind::script:
      return make_script_provider(config);
  }
  return make_openai_provider(config);
}

void throw_http_error(const std::string& what, const HttpResponse& r, const LlmConfig& config,
                      const ChatRequest* request) {
  const std::string where = fmt::format("{} at {} (model {})", what, config.base_url, config.model);
  std::string msg;
  ExitCode code = ExitCode::environment;
  if (r.cancelled) {
    msg = fmt::format("{}: cancelled", where);
  } else if (r.deadline_passed) {
    throw DeadlinePassed(redact(fmt::format("{}: {}", where, r.transport_error), config.api_key));
  } else if (r.too_large) {
    msg = fmt::format(
        "{}: {} (the reply was abandoned; raise the bound with --max-reply-bytes or llm.max_reply_bytes if the "
        "endpoint's replies are really this large)",
        where, r.transport_error);
  } else if (r.status == 0) {
    msg = fmt::format("{}: cannot reach the endpoint after {} attempt(s): {}", where, r.attempts, r.transport_error);
  } else {
    const std::string said = server_message(r.body);
    if (auto refusal = context_refusal(r.status, r.body))
      throw ContextExceeded(
          redact(fmt::format("{}: HTTP {}: the request is over the model's context window: {}", where, r.status, said),
                 config.api_key),
          *refusal);
    if (r.status == 401 || r.status == 403) {
      msg = fmt::format("{}: HTTP {}: the endpoint refused the API key{}: {}", where, r.status,
                        config.api_key_source.empty() ? " (none was set)" : " from " + config.api_key_source, said);
    } else if (r.status == 404) {
      code = ExitCode::bad_input;
      msg = fmt::format("{}: HTTP 404: model or URL not found (check --model and --base-url): {}", where, said);
    } else if (r.status == 400 || r.status == 422) {
      code = ExitCode::bad_input;
      msg = fmt::format("{}: HTTP {}: the server rejected the request: {}", where, r.status, said);
    } else {
      msg = fmt::format("{}: HTTP {} after {} attempt(s): {}", where, r.status, r.attempts, said);
    }
    // llama-cpp-python answers tool_choice "required" with HTTP 500: say so rather than leave the
    // user to guess from "Internal Server Error".
    const bool refused = r.status >= 500 || r.status == 400 || r.status == 422;
    if (refused && request != nullptr && !is_auto_tool_choice(request->tool_choice)) {
      const bool configured = request->tool_choice == config.tool_choice && config.origin.count("tool_choice");
      msg += fmt::format("; {}",
                         tool_choice_hint(request->tool_choice, configured ? config.origin.at("tool_choice") : ""));
    }
  }
  throw Error(code, redact(msg, config.api_key));
}

}  // namespace kagent::llm
