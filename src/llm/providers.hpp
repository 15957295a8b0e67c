#pragma once
// The providers' constructors (each in its own file); make_provider() picks one.
#include <memory>

#include "kagent/llm/provider.hpp"

namespace kagent::llm {

std::unique_ptr<Provider> make_openai_provider(const LlmConfig& config);     // openai.cpp
std::unique_ptr<Provider> make_anthropic_provider(const LlmConfig& config);  // anthropic.cpp
std::unique_ptr<Provider> make_script_provider(const LlmConfig& config);     // script.cpp

// For providers: the error a final HTTP response means (exit codes in provider.hpp), with the
// server's own message and never the key. `what` names the request ("openai chat completions").
// `request`, when given: a server error (5xx) or a rejected request (400, 422) answering a tool
// choice other than auto names the choice as the likely cause.
[[noreturn]] void throw_http_error(const std::string& what, const HttpResponse& r, const LlmConfig& config,
                                   const ChatRequest* request = nullptr);

}  // namespace kagent::llm
