// The model's context window: given by the user (flag, op.json, config file), else read from the
// server (vLLM's /v1/models, llama.cpp's /props, Ollama's /api/show and /api/ps, LM Studio's
// /api/v0/models) within a short timeout, else a documented default; and each server's own words
// for a request over its window, with the figures they carry.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/llm/context_window.hpp"
#include "kagent/llm/provider.hpp"
#include "kagent/sandbox/process.hpp"
#include "mock_server.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::llm;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

LlmConfig config_for(const test::MockServer& s, const std::string& model = "served-model") {
  LlmConfig c;
  c.provider = ProviderKind::openai;
  c.base_url = s.url("/v1");
  c.model = model;
  c.stream = false;
  c.http.max_attempts = 1;
  return c;
}

void json_route(test::MockServer& s, const std::string& path, const json& body) {
  s.http().Get(path, [body](const httplib::Request&, httplib::Response& res) {
    res.set_content(body.dump(), "application/json");
  });
}

}  // namespace

TEST(ContextWindow, ConfigKeyFlagAndRange) {
  test::TempDir dir;
  auto getenv = [](const char*) -> const char* { return nullptr; };
  LlmFlags f;
  f.model = "m";
  LlmConfig c = resolve_llm_config(f, nullptr, (dir.path() / "none.json").string(), getenv);
  EXPECT_EQ(c.context_tokens, 0) << "not given: the server is asked";
  EXPECT_EQ(c.origin["context_tokens"], "default");
  auto file = dir.write("c.json", R"({"llm": {"context_tokens": 65536}})");
  c = resolve_llm_config(f, nullptr, file.string(), getenv);
  EXPECT_EQ(c.context_tokens, 65536);
  c = resolve_llm_config(f, {{"context_tokens", 16384}}, file.string(), getenv);
  EXPECT_EQ(c.context_tokens, 16384) << "op.json beats the config file";
  EXPECT_EQ(c.origin["context_tokens"], "op.json");
  f.context_tokens = 32768;
  c = resolve_llm_config(f, {{"context_tokens", 16384}}, file.string(), getenv);
  EXPECT_EQ(c.context_tokens, 32768) << "the flag beats both";
  EXPECT_EQ(c.origin["context_tokens"], "flag");
  f.context_tokens = 100;
  try {
    resolve_llm_config(f, nullptr, file.string(), getenv);
    ADD_FAILURE() << "a window of 100 tokens was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--context-tokens: expected an integer in [1024"), std::string::npos)
        << e.what();
  }
  f.context_tokens = 0;
  auto bad = dir.write("bad.json", R"({"llm": {"context_tokens": "big"}})");
  EXPECT_THROW(resolve_llm_config(f, nullptr, bad.string(), getenv), InputError);
}

// The user's figure is used as given: the server is not asked.
TEST(ContextWindow, GivenWindowIsUsedWithoutAskingTheServer) {
  test::MockServer s;
  std::atomic<int> asked{0};
  s.http().Get(".*", [&](const httplib::Request&, httplib::Response& res) {
    ++asked;
    res.status = 404;
  });
  s.start();
  LlmConfig c = config_for(s);
  c.context_tokens = 20000;
  c.origin["context_tokens"] = "flag";
  ContextWindow w = find_context_window(c);
  EXPECT_EQ(w.tokens, 20000);
  EXPECT_EQ(w.source, "--context-tokens");
  c.origin["context_tokens"] = "config file /x/config.json";
  EXPECT_EQ(find_context_window(c).source, "config file /x/config.json");
  EXPECT_EQ(asked.load(), 0);
}

// vLLM (and SGLang): the model's entry in GET /v1/models has max_model_len.
TEST(ContextWindow, VllmModelsMaxModelLen) {
  test::MockServer s;
  std::string auth;
  s.http().Get("/v1/models", [&](const httplib::Request& req, httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    json body = {{"object", "list"},
                 {"data",
                  {{{"id", "other-model"}, {"object", "model"}, {"max_model_len", 131072}},
                   {{"id", "served-model"}, {"object", "model"}, {"owned_by", "vllm"}, {"max_model_len", 32768}}}}};
    res.set_content(body.dump(), "application/json");
  });
  s.start();
  LlmConfig c = config_for(s);
  c.api_key = "sk-window-secret";
  ContextWindow w = find_context_window(c);
  EXPECT_EQ(w.tokens, 32768);
  EXPECT_NE(w.source.find("/v1/models max_model_len"), std::string::npos) << w.source;
  EXPECT_EQ(auth, "Bearer sk-window-secret");
}

// llama.cpp's llama-server: /v1/models has only the trained length; /props has the served window,
// a slot's under default_generation_settings (newer builds) or at the top level.
TEST(ContextWindow, LlamaCppProps) {
  for (const json& props :
       {json{{"default_generation_settings", {{"n_ctx", 8192}, {"params", json::object()}}}, {"total_slots", 1}},
        json{{"n_ctx", 8192}, {"total_slots", 1}}}) {
    test::MockServer s;
    json_route(s, "/v1/models",
               {{"object", "list"}, {"data", {{{"id", "model.gguf"}, {"meta", {{"n_ctx_train", 131072}}}}}}});
    json_route(s, "/props", props);
    s.start();
    ContextWindow w = find_context_window(config_for(s, "model.gguf"));
    EXPECT_EQ(w.tokens, 8192) << props.dump();
    EXPECT_NE(w.source.find("/props"), std::string::npos) << w.source;
    EXPECT_NE(w.source.find("n_ctx"), std::string::npos) << w.source;
  }
}

// Ollama: the model's num_ctx parameter, else the loaded model's context_length in /api/ps, else
// its smallest default (never above what the model was trained for).
TEST(ContextWindow, OllamaNumCtxLoadedModelOrDefault) {
  auto ollama = [](test::MockServer& s, const json& show, const json& ps) {
    json_route(s, "/v1/models", {{"object", "list"}, {"data", {{{"id", "qwen3:latest"}, {"object", "model"}}}}});
    s.http().Post("/api/show", [show](const httplib::Request& req, httplib::Response& res) {
      if (json::parse(req.body).value("model", "") != "qwen3") {
        res.status = 404;
        return;
      }
      res.set_content(show.dump(), "application/json");
    });
    json_route(s, "/api/ps", ps);
    json_route(s, "/api/version", {{"version", "0.12.6"}});
    s.start();
  };
  const json info = {{"general.architecture", "qwen3"}, {"qwen3.context_length", 40960}};
  const json none_loaded = {{"models", json::array()}};
  {
    test::MockServer s;
    ollama(s, {{"parameters", "temperature 0.6\nnum_ctx 16384\nstop \"<|im_end|>\""}, {"model_info", info}},
           none_loaded);
    ContextWindow w = find_context_window(config_for(s, "qwen3"));
    EXPECT_EQ(w.tokens, 16384);
    EXPECT_NE(w.source.find("/api/show parameters num_ctx"), std::string::npos) << w.source;
  }
  {
    test::MockServer s;
    ollama(s, {{"parameters", "temperature 0.6"}, {"model_info", info}},
           {{"models", {{{"name", "qwen3:latest"}, {"model", "qwen3:latest"}, {"context_length", 32768}}}}});
    ContextWindow w = find_context_window(config_for(s, "qwen3"));
    EXPECT_EQ(w.tokens, 32768);
    EXPECT_NE(w.source.find("/api/ps context_length"), std::string::npos) << w.source;
  }
  {
    test::MockServer s;
    ollama(s, {{"model_info", info}}, none_loaded);
    ContextWindow w = find_context_window(config_for(s, "qwen3"));
    EXPECT_EQ(w.tokens, kOllamaDefaultContextTokens);
    EXPECT_NE(w.source.find("Ollama's smallest default num_ctx"), std::string::npos) << w.source;
  }
}

TEST(ContextWindow, LmStudioLoadedContextLength) {
  test::MockServer s;
  json_route(s, "/api/v0/models/qwen2.5-7b-instruct",
             {{"id", "qwen2.5-7b-instruct"},
              {"state", "loaded"},
              {"max_context_length", 32768},
              {"loaded_context_length", 4096}});
  s.start();
  ContextWindow w = find_context_window(config_for(s, "qwen2.5-7b-instruct"));
  EXPECT_EQ(w.tokens, 4096);
  EXPECT_NE(w.source.find("loaded_context_length"), std::string::npos) << w.source;
}

// A server that says nothing, one that does not answer in time, and none at all: the default,
// and why; hosted APIs get theirs without a request.
TEST(ContextWindow, DefaultsWhenTheServerDoesNotSay) {
  {
    test::MockServer s;
    s.start();  // every path 404
    ContextWindow w = find_context_window(config_for(s));
    EXPECT_EQ(w.tokens, kDefaultContextTokens);
    EXPECT_NE(w.source.find("default"), std::string::npos) << w.source;
    EXPECT_NE(w.probe_note.find("no /models max_model_len"), std::string::npos) << w.probe_note;
  }
  {
    test::MockServer s;
    s.http().Get(".*", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(1500ms);  // longer than the probe waits
      res.set_content("{}", "application/json");
    });
    s.start();
    ContextWindow w = find_context_window(config_for(s), 200ms);
    EXPECT_EQ(w.tokens, kDefaultContextTokens);
  }
  {
    test::MockServer s;
    s.start();
    LlmConfig c = config_for(s);
    s.stop();
    ContextWindow w = find_context_window(c, 500ms);
    EXPECT_EQ(w.tokens, kDefaultContextTokens);
    EXPECT_NE(w.probe_note.find("did not answer"), std::string::npos) << w.probe_note;
  }
  LlmConfig anthropic;
  anthropic.provider = ProviderKind::anthropic;
  anthropic.base_url = "http://127.0.0.1:1";  // never asked
  EXPECT_EQ(find_context_window(anthropic).tokens, kAnthropicContextTokens);
  LlmConfig openai;
  openai.base_url = "https://api.openai.com/v1";
  openai.model = "gpt-4o";
  EXPECT_EQ(find_context_window(openai).tokens, kOpenAiContextTokens) << "no request to the hosted API";
}

// Each server's words for a request over its window, and the figures they give.
TEST(ContextWindow, RecognisesEachServersRefusal) {
  struct Case {
    long status;
    std::string body;
    std::optional<int64_t> window, prompt;
  };
  const std::vector<Case> cases = {
      // OpenAI
      {400,
       R"({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})",
       128000, 130512},
      // vLLM, older and newer wording
      {400,
       R"({"object": "error", "message": "This model's maximum context length is 32768 tokens. However, you requested 40960 tokens (32768 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "code": 400})",
       32768, 32768},
      {400,
       R"({"error": {"message": "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 32768 tokens and your request has 30000 input tokens (8192 > 32768 - 30000).", "type": "BadRequestError", "code": 400}})",
       32768, 30000},
      {400, R"({"message": "The decoder prompt (length 40000) is longer than the maximum model length of 32768."})",
       32768, 40000},
      // SGLang
      {400, R"({"message": "The input (40000 tokens) is longer than the model's context length (32768 tokens)."})",
       32768, 40000},
      // llama.cpp, 400 and (older builds) 500
      {400,
       R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}})",
       8192, 14429},
      {500,
       R"({"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}})",
       256, 1407},
      // llama-cpp-python
      {400, R"({"error": {"message": "Requested tokens (2285) exceed context window of 2048"}})", 2048, std::nullopt},
      // LM Studio
      {400,
       R"({"error":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."})",
       4096, 13055},
      {400,
       R"({"error": "Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 7866 tokens, which is not enough."})",
       7866, 15857},
      // TGI
      {422,
       R"({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`", "error_type": "validation"})",
       4096, 4000},
      // Anthropic
      {400,
       R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}})",
       200000, 208310},
      {400,
       R"({"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 180000 + 40000 > 200000, decrease input length or `max_tokens` and try again"}})",
       200000, 180000},
  };
  for (const auto& c : cases) {
    auto r = context_refusal(c.status, c.body);
    ASSERT_TRUE(r.has_value()) << c.body;
    EXPECT_EQ(r->window, c.window) << c.body;
    EXPECT_EQ(r->prompt_tokens, c.prompt) << c.body;
  }
  // Other refusals are not about the window.
  EXPECT_FALSE(context_refusal(400, R"({"error": {"message": "tool_choice 'required' is not supported"}})"));
  EXPECT_FALSE(context_refusal(401, R"({"error": {"message": "maximum context length is 8 tokens"}})"));
  EXPECT_FALSE(context_refusal(404, R"({"error": "model not found"})"));
}

// The provider throws ContextExceeded (an InputError) carrying the figures, after one request:
// not the null-content fallback meant for servers that refuse "content": null.
TEST(ContextWindow, ProviderThrowsContextExceeded) {
  test::MockServer s;
  std::atomic<int> requests{0};
  s.http().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++requests;
    res.status = 400;
    res.set_content(
        R"({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 6000 tokens (4000 in the messages, 2000 in the completion).", "code": 400})",
        "application/json");
  });
  s.start();
  auto provider = make_provider(config_for(s));
  ChatRequest rq;
  rq.messages.push_back({Role::user, "go", {}, "", "", false});
  Message call{Role::assistant, "", {{"c1", "list_files", json::object(), "{}", ""}}, "", "", false};
  rq.messages.push_back(call);
  rq.messages.push_back({Role::tool, "files", {}, "c1", "list_files", false});
  try {
    provider->chat(rq);
    ADD_FAILURE() << "no error";
  } catch (const ContextExceeded& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_EQ(e.facts().window, 4096);
    EXPECT_EQ(e.facts().prompt_tokens, 4000);
    EXPECT_NE(std::string(e.what()).find("over the model's context window"), std::string::npos) << e.what();
  }
  EXPECT_EQ(requests.load(), 1);
}

// doctor prints the window it found for the configured model.
TEST(ContextWindow, DoctorPrintsTheWindow) {
  test::MockServer s;
  json_route(s, "/v1/models", {{"data", {{{"id", "doctor-model"}, {"max_model_len", 24576}}}}});
  s.http().Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        json{{"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "pong"}}}}}}}.dump(),
        "application/json");
  });
  s.start();
  test::TempDir dir;
  dir.write("kagent/config.json", R"({"llm": {"stream": false}})");
  auto r = run_capture(
      {"env", "KAGENT_BASE_URL=" + s.url("/v1"), "KAGENT_MODEL=doctor-model", "XDG_CONFIG_HOME=" + dir.path().string(),
       (test::binary_dir() / "kagent").string(), "doctor", "--json"},
      120s);
  auto j = json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.output;
  bool seen = false;
  for (const auto& c : j["checks"])
    if (c["name"] == "llm context") {
      seen = true;
      const std::string detail = c["detail"];
      EXPECT_NE(detail.find("24576 tokens"), std::string::npos) << detail;
      EXPECT_NE(detail.find("max_model_len"), std::string::npos) << detail;
    }
  EXPECT_TRUE(seen) << r.output;
}
