// `kagent doctor`'s one cheap request: does the configured endpoint answer, and does it call tools?
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kagent/llm/probe.hpp"
#include "kagent/sandbox/process.hpp"
#include "mock_server.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::llm;
using namespace std::chrono_literals;

namespace {

// A Chat Completions endpoint that answers every request with `message` (non-streamed).
void answer_with(test::MockServer& s, nlohmann::json message, std::string* seen_auth = nullptr) {
  s.http().Post("/v1/chat/completions", [message, seen_auth](const httplib::Request& req, httplib::Response& res) {
    if (seen_auth) *seen_auth = req.get_header_value("Authorization");
    nlohmann::json body = {{"id", "x"},
                           {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "tool_calls"}}}},
                           {"usage", {{"prompt_tokens", 42}, {"completion_tokens", 7}}}};
    res.set_content(body.dump(), "application/json");
  });
  s.start();
}

LlmConfig config_for(const test::MockServer& s) {
  LlmConfig c;
  c.provider = ProviderKind::openai;
  c.base_url = s.url("/v1");
  c.model = "probe-model";
  c.api_key = "sk-probe-secret";
  c.api_key_source = "$KAGENT_API_KEY";
  c.stream = false;
  c.http.max_attempts = 1;
  return c;
}

const nlohmann::json kPingCall = {{"role", "assistant"},
                                  {"content", nullptr},
                                  {"tool_calls",
                                   {{{"id", "call_1"},
                                     {"type", "function"},
                                     {"function", {{"name", "ping"}, {"arguments", R"({"word":"kagent"})"}}}}}}};

}  // namespace

TEST(Probe, SeesAToolCall) {
  test::MockServer s;
  std::string auth;
  answer_with(s, kPingCall, &auth);
  auto provider = make_provider(config_for(s));
  ProbeResult r = probe_tool_calling(*provider);
  EXPECT_TRUE(r.answered) << r.detail;
  EXPECT_TRUE(r.tool_called) << r.detail;
  EXPECT_NE(r.detail.find("tool calling works"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("42 + 7 tokens"), std::string::npos) << r.detail;
  EXPECT_EQ(auth, "Bearer sk-probe-secret");
}

TEST(Probe, TextOnlyAnswerIsNotToolCalling) {
  test::MockServer s;
  answer_with(s, {{"role", "assistant"}, {"content", "pong"}});
  ProbeResult r = probe_tool_calling(*make_provider(config_for(s)));
  EXPECT_TRUE(r.answered);
  EXPECT_FALSE(r.tool_called);
  EXPECT_NE(r.detail.find("without calling the offered tool"), std::string::npos) << r.detail;
}

TEST(Probe, ACallWrittenAsTextIsSaidSo) {
  // A server with tool calling off, a Qwen model writing its call into the text.
  test::MockServer s;
  answer_with(s,
              {{"role", "assistant"},
               {"content", "<tool_call>\n{\"name\": \"ping\", \"arguments\": {\"word\": \"kagent\"}}\n</tool_call>"}});
  ProbeResult r = probe_tool_calling(*make_provider(config_for(s)));
  EXPECT_TRUE(r.answered);
  EXPECT_TRUE(r.tool_called) << r.detail;
  EXPECT_NE(r.detail.find("wrote its tool call as text"), std::string::npos) << r.detail;
}

TEST(Probe, UnreachableEndpointIsReportedNotThrown) {
  test::MockServer s;
  s.start();
  LlmConfig c = config_for(s);
  s.stop();  // nothing listens on that port any more
  ProbeResult r = probe_tool_calling(*make_provider(c));
  EXPECT_FALSE(r.answered);
  EXPECT_FALSE(r.detail.empty());
  EXPECT_EQ(r.detail.find("sk-probe-secret"), std::string::npos) << r.detail;
}

TEST(Probe, DoctorChecksTheConfiguredEndpoint) {
  test::MockServer s;
  answer_with(s, kPingCall);
  test::TempDir dir;
  dir.write("kagent/config.json", R"({"llm": {"stream": false}})");
  auto r = run_capture(
      {"env", "KAGENT_BASE_URL=" + s.url("/v1"), "KAGENT_MODEL=doctor-model", "KAGENT_API_KEY=sk-doctor-secret",
       "XDG_CONFIG_HOME=" + dir.path().string(), (test::binary_dir() / "kagent").string(), "doctor", "--json"},
      120s);
  EXPECT_EQ(r.output.find("sk-doctor-secret"), std::string::npos) << r.output;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.output;
  bool seen = false;
  for (const auto& c : j["checks"]) {
    if (c["name"] != "llm endpoint") continue;
    seen = true;
    EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
    const std::string detail = c["detail"];
    EXPECT_NE(detail.find("tool calling works"), std::string::npos) << detail;
    EXPECT_NE(detail.find("doctor-model"), std::string::npos) << detail;
    EXPECT_NE(detail.find("$KAGENT_API_KEY"), std::string::npos) << detail;
  }
  EXPECT_TRUE(seen) << r.output;
}
