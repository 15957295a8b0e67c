#pragma once
// The cheap request `kagent doctor` makes: one short conversation offering a single tool, to tell
// "the endpoint answers" from "the endpoint answers and calls tools" (a server started without
// tool-call parsing, or a model without tool support, answers in text).
#include <string>

#include "kagent/llm/provider.hpp"

namespace kagent::llm {

struct ProbeResult {
  bool answered = false;     // a well-formed reply came back
  bool tool_called = false;  // it called the offered tool with valid arguments
  std::string detail;        // one line for people: latency, tokens, or what went wrong
};

// Never throws: failures (unreachable, refused key, ...) come back in detail, key redacted.
ProbeResult probe_tool_calling(Provider& provider);

}  // namespace kagent::llm
