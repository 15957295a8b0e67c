// The script provider: JSONL turns played back in order, validated line by line up front.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/llm/provider.hpp"
#include "test_util.hpp"

namespace kagent::llm {
namespace {

using nlohmann::json;

// Message has members without default initializers, so aggregate initialization with only
// some of them trips -Wmissing-field-initializers.
Message msg(Role role, std::string content) {
  Message m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

LlmConfig script_config(const std::filesystem::path& path) {
  LlmConfig c;
  c.provider = ProviderKind::script;
  c.script = path.string();
  return c;
}

// The InputError the script at `contents` gives, or "" when it loads.
std::string load_error(const test::TempDir& dir, const std::string& contents) {
  auto path = dir.write("turns.jsonl", contents);
  try {
    make_provider(script_config(path));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScriptProvider, PlaysTurnsInOrder) {
  test::TempDir dir;
  auto path = dir.write(
      "turns.jsonl",
      R"({"content": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "a.cu"}},)"
      R"( {"name": "compile", "arguments": {}, "id": "mine"}], "usage": {"input_tokens": 10, "output_tokens": 4}})"
      "\n\n   \n"
      R"({"tool_calls": [{"name": "eval"}]})"
      "\r\n"
      R"({"content": "Done.", "stop_reason": "max_tokens"})"
      "\n"
      R"({"content": "Bye."})");
  auto provider = make_provider(script_config(path));
  EXPECT_EQ(provider->name(), "script");

  ChatRequest ignored;
  ignored.messages = {msg(Role::user, "anything")};
  ChatResponse r1 = provider->chat(ignored);
  EXPECT_EQ(r1.message.role, Role::assistant);
  EXPECT_EQ(r1.message.content, "Let me look.");
  ASSERT_EQ(r1.message.tool_calls.size(), 2u);
  EXPECT_EQ(r1.message.tool_calls[0].id, "script_1_1");
  EXPECT_EQ(r1.message.tool_calls[0].name, "read");
  EXPECT_EQ(r1.message.tool_calls[0].arguments, json({{"path", "a.cu"}}));
  EXPECT_EQ(json::parse(r1.message.tool_calls[0].raw_arguments), r1.message.tool_calls[0].arguments);
  EXPECT_EQ(r1.message.tool_calls[1].id, "mine");
  EXPECT_EQ(r1.stop_reason, "tool_use");
  EXPECT_EQ(r1.usage.input_tokens, 10);
  EXPECT_EQ(r1.usage.output_tokens, 4);
  EXPECT_EQ(r1.attempts, 1);
  EXPECT_EQ(r1.latency_s, 0.0);

  ChatResponse r2 = provider->chat({});
  EXPECT_EQ(r2.message.content, "");
  ASSERT_EQ(r2.message.tool_calls.size(), 1u);
  EXPECT_EQ(r2.message.tool_calls[0].id, "script_2_1");
  EXPECT_EQ(r2.message.tool_calls[0].arguments, json::object());  // absent arguments: {}
  EXPECT_EQ(r2.stop_reason, "tool_use");
  EXPECT_EQ(r2.usage.input_tokens, 0);

  ChatResponse r3 = provider->chat({});
  EXPECT_EQ(r3.message.content, "Done.");
  EXPECT_TRUE(r3.message.tool_calls.empty());
  EXPECT_EQ(r3.stop_reason, "max_tokens");

  ChatResponse r4 = provider->chat({});
  EXPECT_EQ(r4.message.content, "Bye.");
  EXPECT_EQ(r4.stop_reason, "end_turn");
}

TEST(ScriptProvider, ExhaustedScriptIsEnvError) {
  test::TempDir dir;
  auto path = dir.write("one.jsonl", "{\"content\": \"only\"}\n");
  auto provider = make_provider(script_config(path));
  provider->chat({});
  try {
    provider->chat({});
    FAIL() << "expected EnvError";
  } catch (const EnvError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), ExitCode::environment);
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find("no more turns (1 played)"), std::string::npos) << what;
  }
}

TEST(ScriptErrors, MalformedLineNamesFileAndLine) {
  test::TempDir dir;
  std::string where = (dir / "turns.jsonl").string() + ":3: ";
  std::string ok = "{\"content\": \"fine\"}\n\n";  // lines 1 and 2 (blank)

  std::string e = load_error(dir, ok + "{\"content\": \"unterminated\n");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;

  e = load_error(dir, ok + "[1, 2]\n");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("one assistant turn per line"), std::string::npos) << e;

  e = load_error(dir, ok + R"({"content": 5})");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("\"content\" must be a string"), std::string::npos) << e;

  e = load_error(dir, ok + R"({"toolcalls": []})");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("unknown key \"toolcalls\""), std::string::npos) << e;

  e = load_error(dir, ok + R"({"tool_calls": [{"name": "run", "arguments": "[1]"}]})");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("tool_calls[0].arguments must be a JSON object"), std::string::npos) << e;

  e = load_error(dir, ok + R"({"tool_calls": [{"arguments": {}}]})");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("missing \"name\""), std::string::npos) << e;

  e = load_error(dir, ok + R"({"usage": {"input_tokens": -1}})");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;
  EXPECT_NE(e.find("non-negative integer"), std::string::npos) << e;

  e = load_error(dir, ok + R"({"stop_reason": null})");
  EXPECT_EQ(e.rfind(where, 0), 0u) << e;

  e = load_error(dir, "\n  \n");
  EXPECT_NE(e.find("no turns"), std::string::npos) << e;
}

TEST(ScriptErrors, MissingFileIsInputError) {
  test::TempDir dir;
  std::string missing = (dir / "nope.jsonl").string();
  try {
    make_provider(script_config(missing));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_provider(script_config("")), InputError);
}

}  // namespace
}  // namespace kagent::llm
