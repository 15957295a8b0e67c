#pragma once
// Server-sent events as the OpenAI and Anthropic streaming APIs send them: "event:" and "data:"
// lines, events separated by a blank line, comments (":") ignored, CRLF or LF. Bytes arrive in
// arbitrary chunks; feed() buffers partial lines and returns the events completed so far. Linear
// in the bytes fed, however the stream is cut.
#include <string>
#include <string_view>
#include <vector>

namespace kagent::llm {

struct SseEvent {
  std::string event;  // the "event:" field ("" when none)
  std::string data;   // "data:" lines joined with '\n'
};

class SseParser {
 public:
  std::vector<SseEvent> feed(std::string_view chunk);
  // Events still pending at the end of the stream (one without its blank line).
  std::vector<SseEvent> finish();
  void reset();

 private:
  void line(std::string_view l, std::vector<SseEvent>& out);
  std::string buf_;
  // How far buf_ has been searched for a line end: a long line arriving in many chunks is
  // scanned once, not once per chunk (that was quadratic: 50 MB of arguments took minutes).
  size_t scanned_ = 0;
  SseEvent cur_;
  bool has_data_ = false;
};

}  // namespace kagent::llm
