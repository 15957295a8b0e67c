// The SSE parser, fed the input cut into chunks at positions the input itself chooses.
#include "fuzz_util.hpp"
#include "kagent/llm/sse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;  // chunk size
  std::string_view text = kagent::fuzz::text_of(data + 1, size - 1);
  kagent::llm::SseParser parser;
  size_t events = 0;
  for (size_t at = 0; at < text.size(); at += step) events += parser.feed(text.substr(at, step)).size();
  events += parser.finish().size();
  // Every event needs at least its blank line or the end of the stream: never more than the lines.
  if (events > text.size() + 1) __builtin_trap();
  return 0;
}
