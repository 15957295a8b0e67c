#include "kagent/llm/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/text.hpp"

namespace kagent::llm {

namespace {

using Clock = std::chrono::steady_clock;

// How often the transfer loop wakes up with nothing to do, to check cancel_flag() and the idle
// timeout: short enough that Ctrl-C feels immediate and a 300 ms idle timeout is honoured.
constexpr int kPollMs = 20;
// Back-off sleeps are cut into steps this long so that Ctrl-C interrupts them.
constexpr auto kSleepStep = std::chrono::milliseconds(20);

void global_init() {
  static std::once_flag once;
  static CURLcode code = CURLE_OK;
  std::call_once(once, [] { code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (code != CURLE_OK)
    throw EnvError(std::string("libcurl: global initialisation failed: ") + curl_easy_strerror(code));
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using EasyPtr = std::unique_ptr<CURL, EasyDeleter>;
using MultiPtr = std::unique_ptr<CURLM, MultiDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What the curl callbacks of one attempt share with the loop that drives it.
struct Attempt {
  CURL* easy = nullptr;
  HttpResponse* response = nullptr;
  const ChunkSink* sink = nullptr;
  Clock::time_point last_activity = Clock::now();
  curl_off_t last_down = 0, last_up = 0;
  size_t max_bytes = 0;  // HttpOptions::max_reply_bytes
  size_t bytes = 0;      // of headers and body so far
  std::optional<Deadline> deadline;
  bool sink_stopped = false;
  bool cancelled = false;
  bool too_large = false;
  bool deadline_passed = false;

  // Counts `n` more bytes; false once the reply is over its bound (the transfer must stop).
  bool take(size_t n) {
    bytes += n;
    if (bytes <= max_bytes) return true;
    too_large = true;
    return false;
  }
  // Whether the transfer must stop now: Ctrl-C or the caller's deadline.
  bool must_stop() {
    if (cancel_flag().load()) cancelled = true;
    if (deadline && Clock::now() >= *deadline) deadline_passed = true;
    return cancelled || deadline_passed;
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const size_t n = size * count;
  a->last_activity = Clock::now();
  if (!a->take(n)) return 0;  // headers without end: curl aborts the transfer
  std::string_view line(data, n);
  // A new status line starts a new response (after "100 Continue" or a 1xx): keep only the last.
  if (line.starts_with("HTTP/")) {
    a->response->headers.clear();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;  // the blank line that ends the headers
  std::string name = lower(std::string(trim(line.substr(0, colon))));
  std::string value(trim(line.substr(colon + 1)));
  auto [it, inserted] = a->response->headers.try_emplace(name, value);
  if (!inserted) it->second += ", " + value;  // a repeated header is one comma-separated list
  return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const size_t n = size * count;
  a->last_activity = Clock::now();
  // Fewer bytes than given: curl aborts with CURLE_WRITE_ERROR. Checked before keeping any of
  // them, so the body never holds more than the bound.
  if (a->must_stop() || !a->take(n)) return 0;
  a->response->body.append(data, n);
  if (a->sink != nullptr && *a->sink) {
    // Only a successful response is the stream: an error body (a 429's JSON) is no SSE and
    // must not reach the caller's parser; it stays in `body` for the error message.
    long status = 0;
    curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300 && !(*a->sink)(std::string_view(data, n))) {
      a->sink_stopped = true;
      return 0;
    }
  }
  return n;
}

// Progress counts as activity too: a large request body still being sent is not "idle". A
// non-zero return aborts the transfer (CURLE_ABORTED_BY_CALLBACK): Ctrl-C or the deadline.
int on_progress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* a = static_cast<Attempt*>(user);
  if (a->must_stop()) return 1;
  if (dlnow != a->last_down || ulnow != a->last_up) {
    a->last_down = dlnow;
    a->last_up = ulnow;
    a->last_activity = Clock::now();
  }
  return 0;
}

std::string curl_message(CURLcode code, const char* errbuf) {
  std::string msg = curl_easy_strerror(code);
  if (errbuf[0] != '\0' && msg != errbuf) msg += std::string(": ") + errbuf;
  return msg;
}

// One request, no retry. Driven through a multi handle rather than curl_easy_perform because
// easy_perform wakes its callbacks only about once a second while a server is silent, too coarse
// for the idle timeout and for Ctrl-C.
HttpResponse perform_once(const HttpOptions& opt, const std::string& url, curl_slist* headers, const std::string* body,
                          const ChunkSink& sink, const std::optional<Deadline>& deadline, bool& sink_stopped) {
  HttpResponse r;
  const auto started = Clock::now();
  EasyPtr easy(curl_easy_init());
  MultiPtr multi(curl_multi_init());
  if (!easy || !multi) throw EnvError("libcurl: cannot create a transfer handle for " + url);
  CURL* e = easy.get();
  char errbuf[CURL_ERROR_SIZE] = {0};
  Attempt a;
  a.easy = e;
  a.response = &r;
  a.sink = &sink;
  a.max_bytes = opt.max_reply_bytes;
  a.deadline = deadline;

  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  if (body != nullptr) {  // else a GET
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "kagent/" KAGENT_VERSION);  // a User-Agent header overrides it
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);                         // no SIGALRM for DNS timeouts: we run in threads
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &a);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);

  curl_multi_add_handle(multi.get(), e);
  bool idle_expired = false;
  std::string multi_error;
  int running = 1;
  while (true) {
    CURLMcode mc = curl_multi_perform(multi.get(), &running);
    if (mc != CURLM_OK) {
      multi_error = curl_multi_strerror(mc);
      break;
    }
    if (running == 0 || a.cancelled || a.deadline_passed || a.too_large || a.sink_stopped) break;
    if (a.must_stop()) break;
    if (Clock::now() - a.last_activity >= opt.idle_timeout) {
      idle_expired = true;
      break;
    }
    mc = curl_multi_poll(multi.get(), nullptr, 0, kPollMs, nullptr);
    if (mc != CURLM_OK) {
      multi_error = curl_multi_strerror(mc);
      break;
    }
  }

  CURLcode result = CURLE_OK;
  bool finished = false;
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi.get(), &left)) {
    if (m->msg == CURLMSG_DONE && m->easy_handle == e) {
      result = m->data.result;
      finished = true;
    }
  }
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
  curl_multi_remove_handle(multi.get(), e);
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  sink_stopped = a.sink_stopped;

  if (a.cancelled || (cancel_flag().load() && !finished)) {
    r.cancelled = true;
    r.status = 0;
    r.transport_error = "cancelled";
  } else if (a.deadline_passed) {
    r.deadline_passed = true;
    r.status = 0;
    r.transport_error = "the run's time budget ran out during the request";
  } else if (a.too_large) {
    r.too_large = true;
    r.status = 0;
    r.transport_error = fmt::format("the reply exceeded the bound of {} bytes", opt.max_reply_bytes);
  } else if (a.sink_stopped) {
    // The receiver chose to stop: the status stands, the body holds what had arrived.
  } else if (idle_expired) {
    r.status = 0;
    r.transport_error = "no data received for " + std::to_string(opt.idle_timeout.count()) + " ms (idle timeout)";
  } else if (!multi_error.empty()) {
    r.status = 0;
    r.transport_error = "libcurl: " + multi_error;
  } else if (!finished) {
    r.status = 0;
    r.transport_error = "libcurl: the transfer ended without a result";
  } else if (result != CURLE_OK) {
    // Also after a status line: a body cut short is no usable response, and worth a retry.
    r.status = 0;
    r.transport_error = curl_message(result, errbuf);
  }
  return r;
}

std::chrono::milliseconds backoff(const HttpOptions& opt, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double base = static_cast<double>(opt.backoff_base.count());
  const double cap = static_cast<double>(opt.backoff_max.count());
  const double ceiling = std::min(cap, base * std::pow(2.0, std::min(attempt - 1, 40)));
  if (ceiling <= 0) return std::chrono::milliseconds(0);
  // Full jitter: clients that failed together do not all come back together.
  std::uniform_real_distribution<double> pick(0.0, ceiling);
  return std::chrono::milliseconds(static_cast<long long>(pick(rng)));
}

// Sleeps `wait`, or less when cancel_flag() is set or the deadline passes meanwhile (then
// returns false).
bool sleep_unless_cancelled(std::chrono::milliseconds wait, const std::optional<Deadline>& deadline) {
  const auto until = Clock::now() + wait;
  while (true) {
    if (cancel_flag().load()) return false;
    const auto now = Clock::now();
    if (deadline && now >= *deadline) return false;
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(kSleepStep, until - now));
  }
}

// A non-negative number of `unit`s ("1", "0.5", " 200 "), rounded up to whole milliseconds.
std::optional<std::chrono::milliseconds> parse_amount(std::string_view text, double unit_ms) {
  text = trim(text);
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  // Capped far beyond any backoff_max so the conversion cannot overflow.
  const double ms = std::clamp(std::ceil(v * unit_ms), 0.0, 1e12);
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

}  // namespace

std::atomic<bool>& cancel_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

HttpClient::HttpClient(HttpOptions options) : opt_(options) {}

HttpResponse HttpClient::post(const std::string& url, const std::vector<std::string>& headers, const std::string& body,
                              const ChunkSink& sink, const std::function<void()>& on_retry,
                              std::optional<Deadline> deadline) const {
  return request(url, headers, &body, sink, on_retry, deadline);
}

HttpResponse HttpClient::get(const std::string& url, const std::vector<std::string>& headers,
                             std::optional<Deadline> deadline) const {
  return request(url, headers, nullptr, {}, {}, deadline);
}

HttpResponse HttpClient::request(const std::string& url, const std::vector<std::string>& headers,
                                 const std::string* body, const ChunkSink& sink, const std::function<void()>& on_retry,
                                 std::optional<Deadline> deadline) const {
  global_init();
  SlistPtr list;
  bool has_expect = false;
  for (const auto& h : headers) {
    if (lower(h.substr(0, 7)) == "expect:") has_expect = true;
    curl_slist* next = curl_slist_append(list.get(), h.c_str());
    if (next == nullptr) throw EnvError("libcurl: out of memory building the request headers for " + url);
    list.release();
    list.reset(next);
  }
  // curl sends "Expect: 100-continue" for large bodies and then waits up to a second for a
  // "100 Continue" that many API servers never send.
  if (!has_expect) {
    curl_slist* next = curl_slist_append(list.get(), "Expect:");
    if (next == nullptr) throw EnvError("libcurl: out of memory building the request headers for " + url);
    list.release();
    list.reset(next);
  }

  // A stream cut after part of it reached the sink is not retried here: the caller has seen the
  // part and knows better (the OpenAI provider falls back to one non-streamed request rather
  // than paying for the same generation several times).
  size_t streamed = 0;
  ChunkSink counting;
  if (sink)
    counting = [&](std::string_view chunk) {
      streamed += chunk.size();
      return sink(chunk);
    };
  const int max_attempts = std::max(1, opt_.max_attempts);
  for (int attempt = 1;; ++attempt) {
    if (deadline && Clock::now() >= *deadline) {  // no request starts after the deadline
      HttpResponse r;
      r.deadline_passed = true;
      r.transport_error = "the run's time budget ran out before the request";
      r.attempts = attempt - 1;
      return r;
    }
    bool sink_stopped = false;
    streamed = 0;
    HttpResponse r = perform_once(opt_, url, list.get(), body, counting, deadline, sink_stopped);
    r.attempts = attempt;
    // A reply over the bound would be as large again: not retried.
    if (r.cancelled || r.deadline_passed || r.too_large || sink_stopped || attempt >= max_attempts) return r;
    if (r.status == 0 && streamed > 0) return r;
    if (r.status != 0 && !retryable_status(r.status)) return r;
    std::chrono::milliseconds wait = backoff(opt_, attempt);
    if (auto asked = retry_after(r)) wait = std::min(*asked, opt_.backoff_max);
    // Said each time, so that an unreachable or overloaded endpoint is not seconds of silence.
    spdlog::warn("{}: {}; trying again in {:.1f} s (attempt {} of {})", url.substr(0, url.find('?')),
                 r.status != 0 ? fmt::format("HTTP {}", r.status) : r.transport_error,
                 static_cast<double>(wait.count()) / 1000.0, attempt + 1, max_attempts);
    if (!sleep_unless_cancelled(wait, deadline)) {
      if (cancel_flag().load()) {
        r.cancelled = true;
      } else {
        r.deadline_passed = true;
        r.status = 0;
        r.transport_error = "the run's time budget ran out while waiting to retry";
      }
      return r;
    }
    if (on_retry) on_retry();
  }
}

bool retryable_status(long status) {
  return status == 408 || status == 409 || status == 429 || (status >= 500 && status <= 599);
}

std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& r) {
  if (auto it = r.headers.find("retry-after-ms"); it != r.headers.end())
    if (auto ms = parse_amount(it->second, 1.0)) return ms;
  auto it = r.headers.find("retry-after");
  if (it == r.headers.end()) return std::nullopt;
  if (auto ms = parse_amount(it->second, 1000.0)) return ms;
  // Else an HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT"): the wait is until then.
  const std::string date(trim(it->second));
  const time_t when = curl_getdate(date.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  const double ms = std::clamp(std::difftime(when, std::time(nullptr)) * 1000.0, 0.0, 1e12);
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

std::string redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  static const std::string kMark = "[redacted]";
  for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + kMark.size()))
    text.replace(pos, secret.size(), kMark);
  return text;
}

}  // namespace kagent::llm
