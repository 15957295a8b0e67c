#include "kagent/llm/sse.hpp"

#include <algorithm>

namespace kagent::llm {

std::vector<SseEvent> SseParser::feed(std::string_view chunk) {
  std::vector<SseEvent> out;
  // A CR that ended the previous line is kept alone in buf_ (a partial line never starts with
  // CR, since CR always ends a line): if the LF of its CRLF starts this chunk, it must not be
  // read as a second, blank line that would dispatch the event early.
  const bool after_cr = !buf_.empty() && buf_[0] == '\r';
  buf_.append(chunk);
  size_t start = 0;
  if (after_cr) {
    if (buf_.size() == 1) return out;
    start = buf_[1] == '\n' ? 2 : 1;
  }
  while (true) {
    // Bytes before scanned_ hold no line end (they were searched by an earlier feed()).
    const size_t end = buf_.find_first_of("\r\n", std::max(start, scanned_));
    if (end == std::string::npos) {
      scanned_ = buf_.size();
      break;
    }
    line(std::string_view(buf_).substr(start, end - start), out);
    if (buf_[end] == '\n') {
      start = end + 1;
    } else if (end + 1 < buf_.size()) {
      start = end + (buf_[end + 1] == '\n' ? 2 : 1);
    } else {
      start = end;  // a CR at the very end: keep it, the next chunk may start with its LF
      break;
    }
  }
  buf_.erase(0, start);
  scanned_ = scanned_ > start ? scanned_ - start : 0;
  return out;
}

std::vector<SseEvent> SseParser::finish() {
  std::vector<SseEvent> out;
  // The stream ended without a line end or without the blank line: what is there still counts.
  // (buf_ is either a partial line or the lone CR kept by feed(), which holds no text.)
  if (!buf_.empty() && buf_[0] != '\r') line(buf_, out);
  line("", out);
  reset();
  return out;
}

void SseParser::reset() {
  buf_.clear();
  scanned_ = 0;
  cur_ = {};
  has_data_ = false;
}

void SseParser::line(std::string_view l, std::vector<SseEvent>& out) {
  if (l.empty()) {
    if (has_data_ || !cur_.event.empty()) out.push_back(std::move(cur_));
    cur_ = {};
    has_data_ = false;
    return;
  }
  if (l[0] == ':') return;  // a comment (servers send them as keep-alives)
  const size_t colon = l.find(':');
  const std::string_view name = l.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (name == "event") {
    cur_.event = value;
  } else if (name == "data") {
    if (has_data_) cur_.data += '\n';
    cur_.data += value;
    has_data_ = true;
  }
  // "id", "retry" and unknown fields mean nothing to a one-shot completion stream.
}

}  // namespace kagent::llm
