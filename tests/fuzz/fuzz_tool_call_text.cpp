// An assistant reply's text as a trainer hands it over: the tool calls read from it (Hermes tags,
// bare JSON, fences), then each call's arguments dumped as a transcript would.
#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "kagent/llm/tool_call_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto r = kagent::llm::tool_calls_in_text(kagent::fuzz::text_of(data, size));
  for (const auto& c : r.calls) {
    c.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (c.arguments.is_null() == c.arguments_error.empty()) __builtin_trap();  // one or the other, always
  }
  return 0;
}
