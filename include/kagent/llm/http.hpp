#pragma once
// HTTP POST (and GET) over libcurl for the providers: connect and idle timeouts, optional streaming of
// the body to a callback (SSE), cancellation (Ctrl-C), a bound on the reply's size, the run's
// deadline, and a retry policy for the statuses that heal (408, 409, 429, 5xx, 529) honouring
// Retry-After / retry-after-ms. The API key travels in a header and never appears in an error
// message (see redact()).
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kagent::llm {

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds idle_timeout{120000};  // no byte received for this long: give up
  int max_attempts = 5;                            // 1 + retries
  std::chrono::milliseconds backoff_base{1000};    // exponential back-off with jitter from here
  std::chrono::milliseconds backoff_max{60000};    // and never longer than this per wait
  // Bytes of one reply (headers and body, streamed or not) before the transfer is abandoned: an
  // endpoint that streams without end must not grow kagent until the OOM killer ends it. A reply
  // of kagent's 8192 tokens is at most about 2 MiB even as a stream of one-token events.
  size_t max_reply_bytes = size_t{8} << 20;
};

using Deadline = std::chrono::steady_clock::time_point;

struct HttpResponse {
  long status = 0;                             // 0: no HTTP response (transport error)
  std::string body;                            // the whole body (also when streamed)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string transport_error;                 // curl's message when status == 0
  bool cancelled = false;
  bool too_large = false;        // abandoned at max_reply_bytes (never retried; status is 0)
  bool deadline_passed = false;  // abandoned at the caller's deadline (never retried; status is 0)
  int attempts = 1;
  double seconds = 0;  // the last attempt's wall time
};

// Receives each chunk of a streamed body as it arrives; return false to abort the transfer.
using ChunkSink = std::function<bool(std::string_view chunk)>;

// Set from a SIGINT handler (or anywhere): every transfer in progress stops at once and no
// retry starts. The agent loop owns when it is set and cleared.
std::atomic<bool>& cancel_flag();

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  const HttpOptions& options() const { return opt_; }

  // One POST with retries. `headers` are "Name: value" lines. With `sink`, the body is also
  // streamed to it (a retry then starts the stream afresh: `on_retry` lets the caller reset its
  // parser). At `deadline` (the run's time budget) the transfer in flight stops and no retry
  // starts, whatever the server still sends (keep-alive comments reset the idle timeout, not
  // this). Never throws for HTTP statuses: the caller decides what a status means.
  HttpResponse post(const std::string& url, const std::vector<std::string>& headers, const std::string& body,
                    const ChunkSink& sink = {}, const std::function<void()>& on_retry = {},
                    std::optional<Deadline> deadline = std::nullopt) const;
  // One GET with the same retries, bound and deadline (the context-window probes read servers'
  // model descriptions with it).
  HttpResponse get(const std::string& url, const std::vector<std::string>& headers,
                   std::optional<Deadline> deadline = std::nullopt) const;

 private:
  // POST `*body`, or GET when body is null.
  HttpResponse request(const std::string& url, const std::vector<std::string>& headers, const std::string* body,
                       const ChunkSink& sink, const std::function<void()>& on_retry,
                       std::optional<Deadline> deadline) const;
  HttpOptions opt_;
};

// Whether a status is worth retrying: 408, 409, 429, 5xx, 529.
bool retryable_status(long status);
// The wait a response asks for (retry-after-ms, or Retry-After in seconds or as an HTTP date).
std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& r);
// `text` with every occurrence of `secret` replaced by "[redacted]" (an empty secret: unchanged).
std::string redact(std::string text, const std::string& secret);

}  // namespace kagent::llm
