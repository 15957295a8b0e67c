// The session routes' bodies (serve/session_request.hpp) as a trainer may send them: a step (one
// call, a reply's calls, or a reply's text whose calls kagent reads) and an open. Refusals are
// RequestError (an InputError); anything else escaping is a finding, and every call read has a name
// and either an object for arguments or the words that say why not.
#include <cstdlib>
#include <string>

#include "fuzz_util.hpp"
#include "kagent/common/error.hpp"
#include "kagent/serve/session_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kagent::serve::RequestLimits limits;
  limits.max_body_bytes = 1 << 16;
  const auto text = kagent::fuzz::text_of(data, size);
  try {
    const auto step = kagent::serve::parse_step(text, limits);
    for (const auto& c : step.calls)
      if (c.arguments_error.empty() != c.arguments.is_object()) std::abort();
    if (!step.from_text && step.calls.empty()) std::abort();
  } catch (const kagent::InputError&) {
  }
  try {
    const auto open = kagent::serve::parse_open_session(text, limits, kagent::serve::SessionLimits{});
    if (open.problem.empty() || open.limits.steps < 1) std::abort();
  } catch (const kagent::InputError&) {
  }
  return 0;
}
