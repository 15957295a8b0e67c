#include "kagent/llm/context_window.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/json_parse.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/llm/http.hpp"

namespace kagent::llm {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A window a server may state: anything else (0, a negative, 10^300) is no statement.
std::optional<int64_t> window_of(const json& v) {
  auto n = json_integer(v, 1, int64_t{1} << 40);
  if (!n) return std::nullopt;
  return n;
}

const json& at(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

json parsed(const HttpResponse& r) {
  if (r.status < 200 || r.status >= 300) return json();
  try {
    return parse_json<json>(r.body);
  } catch (const JsonTextError&) {
    return json();
  }
}

class Prober {
 public:
  Prober(const LlmConfig& c, std::chrono::milliseconds timeout) : config_(c), timeout_(timeout) {
    HttpOptions o;
    o.connect_timeout = timeout;
    o.idle_timeout = timeout;
    o.max_attempts = 1;
    o.max_reply_bytes = size_t{4} << 20;  // /props holds the chat template: tens of KiB
    http_ = HttpClient(o);
    base_ = c.base_url;
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    root_ = base_;
    if (root_.size() >= 3 && root_.compare(root_.size() - 3, 3, "/v1") == 0) root_.resize(root_.size() - 3);
    headers_ = {"Accept: application/json"};
    if (!c.api_key.empty()) headers_.push_back("Authorization: Bearer " + c.api_key);
  }

  std::optional<ContextWindow> probe() {
    for (auto step : {&Prober::models, &Prober::llama_props, &Prober::ollama, &Prober::lm_studio})
      if (auto w = (this->*step)()) return w;
    return std::nullopt;
  }
  bool answered() const { return answered_; }

 private:
  HttpResponse get(const std::string& url) {
    HttpResponse r = http_.get(url, headers_, Clock::now() + timeout_);
    answered_ = answered_ || r.status != 0;
    return r;
  }
  HttpResponse post(const std::string& url, const json& body) {
    std::vector<std::string> h = headers_;
    h.push_back("Content-Type: application/json");
    HttpResponse r = http_.post(url, h, body.dump(), {}, {}, Clock::now() + timeout_);
    answered_ = answered_ || r.status != 0;
    return r;
  }
  static ContextWindow found(int64_t tokens, std::string source) { return {tokens, std::move(source), ""}; }

  // vLLM, SGLang: the served model's entry in the list carries max_model_len.
  std::optional<ContextWindow> models() {
    const std::string url = base_ + "/models";
    const json j = parsed(get(url));
    const json& data = at(j, "data");
    if (!data.is_array()) return std::nullopt;
    const json* entry = nullptr;
    for (const json& m : data)
      if (at(m, "id").is_string() && m["id"] == config_.model) entry = &m;
    if (entry == nullptr && data.size() == 1) entry = &data[0];  // a server that serves one model under any name
    if (entry == nullptr) return std::nullopt;
    if (auto n = window_of(at(*entry, "max_model_len"))) return found(*n, fmt::format("GET {} max_model_len", url));
    return std::nullopt;
  }

  // llama.cpp's llama-server: a slot's window (n_ctx over the parallel slots), else the whole.
  std::optional<ContextWindow> llama_props() {
    const std::string url = root_ + "/props";
    const json j = parsed(get(url));
    if (auto n = window_of(at(at(j, "default_generation_settings"), "n_ctx")))
      return found(*n, fmt::format("GET {} default_generation_settings.n_ctx", url));
    if (auto n = window_of(at(j, "n_ctx"))) return found(*n, fmt::format("GET {} n_ctx", url));
    return std::nullopt;
  }

  // Ollama serves num_ctx tokens (the model's parameter, else the server's default), whatever the
  // model was trained for, and cuts longer prompts without a word.
  std::optional<ContextWindow> ollama() {
    // Only a server that says it is Ollama gets the POST (any other may take a POST for a request).
    if (!at(parsed(get(root_ + "/api/version")), "version").is_string()) return std::nullopt;
    const std::string show_url = root_ + "/api/show";
    const json show = parsed(post(show_url, {{"model", config_.model}}));
    if (!show.is_object()) return std::nullopt;
    if (const json& p = at(show, "parameters"); p.is_string()) {
      static const std::regex kNumCtx(R"((?:^|\n)\s*num_ctx\s+(\d{1,10}))");
      std::smatch m;
      const std::string text = p.get<std::string>();
      if (std::regex_search(text, m, kNumCtx))
        if (auto n = window_of(json(std::stoll(m[1].str()))))
          return found(*n, fmt::format("POST {} parameters num_ctx", show_url));
    }
    std::optional<int64_t> trained;
    if (const json& info = at(show, "model_info"); info.is_object())
      for (const auto& [key, value] : info.items())
        if (key.size() > 15 && key.ends_with(".context_length"))
          if (auto n = window_of(value)) trained = *n;
    const std::string ps_url = root_ + "/api/ps";
    const json ps = parsed(get(ps_url));
    if (const json& models = at(ps, "models"); models.is_array())
      for (const json& m : models) {
        bool same = false;
        for (const char* k : {"name", "model"})
          if (at(m, k).is_string() && (m[k] == config_.model || m[k] == config_.model + ":latest")) same = true;
        if (same)
          if (auto n = window_of(at(m, "context_length")))
            return found(*n, fmt::format("GET {} context_length of the loaded model", ps_url));
      }
    const int64_t n = trained ? std::min(*trained, kOllamaDefaultContextTokens) : kOllamaDefaultContextTokens;
    return found(n, fmt::format("Ollama's smallest default num_ctx (POST {} sets no num_ctx and the model is not "
                                "loaded, so GET {} does not say)",
                                show_url, ps_url));
  }

  // LM Studio: the window the model was loaded with.
  std::optional<ContextWindow> lm_studio() {
    const std::string url = root_ + "/api/v0/models/" + config_.model;
    if (config_.model.find_first_of("?#") != std::string::npos) return std::nullopt;
    if (auto n = window_of(at(parsed(get(url)), "loaded_context_length")))
      return found(*n, fmt::format("GET {} loaded_context_length", url));
    return std::nullopt;
  }

  const LlmConfig& config_;
  std::chrono::milliseconds timeout_;
  HttpClient http_;
  std::string base_, root_;
  std::vector<std::string> headers_;
  bool answered_ = false;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The first number a pattern captures in `text`.
std::optional<int64_t> number(const std::string& text, const std::regex& re) {
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  try {
    const long long v = std::stoll(m[1].str());
    if (v > 0) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

ContextWindow find_context_window(const LlmConfig& config, std::chrono::milliseconds timeout) {
  if (config.context_tokens > 0) {
    auto it = config.origin.find("context_tokens");
    std::string from = it == config.origin.end() ? "given" : it->second;
    if (from == "flag") from = "--context-tokens";
    return {config.context_tokens, from, ""};
  }
  if (config.provider == ProviderKind::anthropic)
    return {kAnthropicContextTokens, "the default for Anthropic's models", ""};
  if (config.provider == ProviderKind::script) return {kDefaultContextTokens, "the default (a script run)", ""};
  std::string url = config.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url == "https://api.openai.com/v1")
    return {kOpenAiContextTokens, "the default for api.openai.com (its models do not say)", ""};
  Prober prober(config, timeout);
  try {
    if (auto w = prober.probe()) return *w;
  } catch (const std::exception& e) {  // libcurl could not start: the default, said why
    return {kDefaultContextTokens, "the default for a server that did not say", e.what()};
  }
  return {kDefaultContextTokens, "the default for a server that did not say",
          prober.answered() ? "no /models max_model_len, /props n_ctx, Ollama or LM Studio window"
                            : "it did not answer within the probe's timeout"};
}

std::optional<ContextRefusal> context_refusal(long status, const std::string& body) {
  // Refusals are 400 (most), 413, 422 (TGI) or 500 (older llama.cpp).
  if (status != 400 && status != 413 && status != 422 && status != 500) return std::nullopt;
  const std::string text = lower(body.substr(0, 8192));
  static const std::vector<std::string> kSays = {
      "context_length_exceeded",                 // OpenAI's code
      "maximum context length",                  // OpenAI, vLLM, llama-cpp-python, Mistral, LiteLLM
      "exceed_context_size_error",               // llama.cpp's type
      "exceeds the available context size",      // llama.cpp
      "longer than the maximum model length",    // vLLM
      "is too long and exceeds limit",           // older vLLM
      "longer than the model's context length",  // SGLang
      "exceed context window",                   // llama-cpp-python
      "context length of only",                  // LM Studio
      "greater than the context length",         // LM Studio
      "cannot truncate prompt with n_keep",      // LM Studio
      "`max_new_tokens` must be <=",             // TGI
      "prompt is too long",                      // Anthropic
      "exceed context limit",                    // Anthropic
      "input length exceeds context window",     // Anthropic
      "context window exceeded",
      "context length exceeded",
  };
  bool says = false;
  for (const auto& s : kSays) says = says || text.find(s) != std::string::npos;
  if (!says) return std::nullopt;

  ContextRefusal r;
  static const std::vector<std::regex> kWindow = {
      std::regex(R"(maximum context length is (\d+))"),
      std::regex(R"("n_ctx"\s*:\s*(\d+))"),
      std::regex(R"(n_ctx:?\s*\(?(\d+))"),
      std::regex(R"(maximum model length of (\d+))"),
      std::regex(R"(model's context length \((\d+))"),
      std::regex(R"(exceeds? context window of (\d+))"),
      std::regex(R"(context length of only (\d+))"),
      std::regex(R"(tokens > (\d+) maximum)"),
      std::regex(R"(exceed context limit: \d+ \+ \d+ > (\d+))"),
      std::regex(R"(must be <= (\d+))"),
  };
  static const std::vector<std::regex> kPrompt = {
      std::regex(R"((\d+) in the messages)"),
      std::regex(R"(your messages resulted in (\d+) tokens)"),
      std::regex(R"(request has (\d+) input tokens)"),
      std::regex(R"("n_prompt_tokens"\s*:\s*(\d+))"),
      std::regex(R"(decoder prompt \(length (\d+)\))"),
      std::regex(R"(input \((\d+) tokens\))"),
      std::regex(R"(input prompt \((\d+) tokens\))"),
      std::regex(R"(prompt is too long: (\d+) tokens)"),
      std::regex(R"(exceed context limit: (\d+) \+)"),
      std::regex(R"(given: (\d+) `inputs` tokens)"),
      std::regex(R"(n_keep:?\s*\(?(\d+))"),
      std::regex(R"(keep the first (\d+) tokens)"),
  };
  for (const auto& re : kWindow)
    if (!r.window) r.window = number(text, re);
  for (const auto& re : kPrompt)
    if (!r.prompt_tokens) r.prompt_tokens = number(text, re);
  return r;
}

}  // namespace kagent::llm
