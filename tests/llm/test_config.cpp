// Which endpoint kagent talks to: flag, then environment, then op.json, then the config file;
// keys only ever through environment variables; clear errors naming the source.
#include <gtest/gtest.h>

#include <map>

#include "kagent/common/error.hpp"
#include "kagent/llm/config.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::llm;

namespace {

class LlmConfigTest : public ::testing::Test {
 protected:
  std::map<std::string, std::string> env;
  test::TempDir dir;
  std::string no_file = (dir.path() / "absent.json").string();

  LlmConfig resolve(const LlmFlags& flags, const nlohmann::json& op = nullptr, std::optional<std::string> file = {}) {
    return resolve_llm_config(flags, op, file ? file : no_file, [this](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  }
  // Flags as the command line gives them (designated initializers would trip -Wmissing-field-initializers).
  static LlmFlags flags(std::string model, std::string provider = "", std::string api_key_env = "") {
    LlmFlags f;
    f.model = std::move(model);
    f.provider = std::move(provider);
    f.api_key_env = std::move(api_key_env);
    return f;
  }
  LlmConfig resume(const LlmFlags& flags, const RecordedEndpoint& recorded, std::optional<std::string> file = {}) {
    return resolve_resumed_llm_config(flags, nullptr, recorded, file ? file : no_file,
                                      [this](const char* name) -> const char* {
                                        auto it = env.find(name);
                                        return it == env.end() ? nullptr : it->second.c_str();
                                      });
  }
  static RecordedEndpoint recorded(std::string provider, std::string base_url, std::string api_key_env = "",
                                   std::string script = "") {
    RecordedEndpoint r;
    r.where = "runs/x/run.json";
    r.provider = std::move(provider);
    r.base_url = std::move(base_url);
    r.api_key_env = std::move(api_key_env);
    r.script = std::move(script);
    return r;
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
};

}  // namespace

TEST_F(LlmConfigTest, DefaultsToOpenAiWithTheFlagsModel) {
  LlmConfig c = resolve(flags("m"));
  EXPECT_EQ(c.provider, ProviderKind::openai);
  EXPECT_EQ(c.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.origin["model"], "flag");
  EXPECT_TRUE(c.api_key.empty());
  EXPECT_TRUE(c.stream);
}

TEST_F(LlmConfigTest, FlagBeatsEnvironmentBeatsOpJsonBeatsConfigFile) {
  auto file = dir.write("config.json",
                        R"({"llm": {"model": "from-file", "base_url": "http://file/v1", "provider": "openai"}})");
  nlohmann::json op = {{"model", "from-op"}, {"base_url", "http://op/v1"}};
  LlmFlags trusting;  // the op.json's endpoint only with --allow-op-endpoint
  trusting.allow_op_endpoint = true;
  EXPECT_EQ(resolve(LlmFlags{}, nullptr, file.string()).model, "from-file");
  EXPECT_EQ(resolve(trusting, op, file.string()).model, "from-op");
  env["KAGENT_MODEL"] = "from-env";
  EXPECT_EQ(resolve(trusting, op, file.string()).model, "from-env");
  LlmFlags flagged = flags("from-flag");
  flagged.allow_op_endpoint = true;
  LlmConfig c = resolve(flagged, op, file.string());
  EXPECT_EQ(c.model, "from-flag");
  EXPECT_EQ(c.base_url, "http://op/v1");
  EXPECT_EQ(c.origin["base_url"], "op.json");
  env["OPENAI_BASE_URL"] = "http://localhost:8000/v1/";
  c = resolve(trusting, op, file.string());
  EXPECT_EQ(c.base_url, "http://localhost:8000/v1") << "trailing slash dropped";
  EXPECT_EQ(c.origin["base_url"], "env $OPENAI_BASE_URL");
}

TEST_F(LlmConfigTest, KeysComeFromVariablesAndNeverShowInDescribe) {
  env["OPENAI_API_KEY"] = "sk-openai-secret";
  LlmConfig c = resolve(flags("m"));
  EXPECT_EQ(c.api_key, "sk-openai-secret");
  EXPECT_EQ(c.api_key_source, "$OPENAI_API_KEY");
  EXPECT_EQ(c.describe().find("sk-openai-secret"), std::string::npos) << c.describe();
  EXPECT_NE(c.describe().find("$OPENAI_API_KEY"), std::string::npos) << c.describe();
  env["MY_KEY"] = "sk-mine";
  c = resolve(flags("m", "", "MY_KEY"));
  EXPECT_EQ(c.api_key, "sk-mine");
  LlmFlags trusting = flags("m");
  trusting.allow_op_endpoint = true;
  c = resolve(trusting, {{"api_key_env", "MY_KEY"}});
  EXPECT_EQ(c.api_key, "sk-openai-secret") << "the usual variable beats the op.json's named one";
  env.erase("OPENAI_API_KEY");
  c = resolve(trusting, {{"api_key_env", "MY_KEY"}});
  EXPECT_EQ(c.api_key, "sk-mine");
  EXPECT_EQ(c.api_key_source, "$MY_KEY");
}

// A problem file is data people download: it may not send the user's key somewhere else.
TEST_F(LlmConfigTest, AnOpJsonCannotRedirectTheKeyWithoutTheFlag) {
  env["OPENAI_API_KEY"] = "sk-openai-secret";
  env["GITHUB_TOKEN"] = "ghp_secret";
  nlohmann::json hostile = {{"base_url", "http://127.0.0.1:9/v1"}, {"model", "m"}, {"api_key_env", "GITHUB_TOKEN"}};
  std::string msg = error_of([&] { resolve(LlmFlags{}, hostile); });
  EXPECT_NE(msg.find("op.json: llm.base_url: a problem file may not choose"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--allow-op-endpoint"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("sk-openai-secret"), std::string::npos) << msg;
  msg = error_of([&] { resolve(LlmFlags{}, {{"model", "m"}, {"api_key_env", "GITHUB_TOKEN"}}); });
  EXPECT_NE(msg.find("op.json: llm.api_key_env"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("ghp_secret"), std::string::npos) << msg;
  msg = error_of([&] { resolve(LlmFlags{}, {{"model", "m"}, {"provider", "anthropic"}}); });
  EXPECT_NE(msg.find("op.json: llm.provider"), std::string::npos) << msg;
  // The model and generation settings stay the op.json's; an endpoint key that changes nothing is fine.
  LlmConfig c = resolve(LlmFlags{}, {{"model", "m-op"}, {"stream", false}, {"base_url", "https://api.openai.com/v1/"}});
  EXPECT_EQ(c.model, "m-op");
  EXPECT_FALSE(c.stream);
  EXPECT_EQ(c.api_key, "sk-openai-secret");
  // With the flag, the user accepted the op.json's endpoint.
  LlmFlags allow;
  allow.allow_op_endpoint = true;
  c = resolve(allow, {{"model", "m"}, {"base_url", "http://127.0.0.1:9/v1"}});
  EXPECT_EQ(c.base_url, "http://127.0.0.1:9/v1");
}

TEST_F(LlmConfigTest, NamedKeyVariableThatIsUnsetIsAnEnvironmentError) {
  try {
    resolve(flags("m", "", "NOT_SET_ANYWHERE"));
    FAIL() << "expected EnvError";
  } catch (const EnvError& e) {
    EXPECT_NE(std::string(e.what()).find("NOT_SET_ANYWHERE"), std::string::npos) << e.what();
  }
}

TEST_F(LlmConfigTest, AnthropicWhenItsKeyIsTheOnlyOne) {
  env["ANTHROPIC_API_KEY"] = "sk-ant";
  LlmConfig c = resolve(flags("claude"));
  EXPECT_EQ(c.provider, ProviderKind::anthropic);
  EXPECT_EQ(c.base_url, "https://api.anthropic.com");
  EXPECT_EQ(c.api_key, "sk-ant");
  env["OPENAI_API_KEY"] = "sk-oa";
  EXPECT_EQ(resolve(flags("gpt")).provider, ProviderKind::openai);
  EXPECT_EQ(resolve(flags("claude", "anthropic")).api_key, "sk-ant");
}

TEST_F(LlmConfigTest, ErrorsNameTheSourceAndWhatWasExpected) {
  EXPECT_NE(error_of([&] { resolve(flags("m", "gemini")); }).find("expected openai, anthropic or script"),
            std::string::npos);
  EXPECT_NE(error_of([&] { resolve(LlmFlags{}); }).find("no model"), std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve(flags("m"), {{"temperature", 0.5}});
            }).find("op.json: llm.temperature: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of([&] { resolve(flags("m"), {{"max_attempts", 0}}); }).find("llm.max_attempts"), std::string::npos);
  auto bad = dir.write("bad.json", "{not json");
  EXPECT_NE(error_of([&] { resolve(flags("m"), nullptr, bad.string()); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { resolve(flags("", "script")); }).find("no script file"), std::string::npos);
}

TEST_F(LlmConfigTest, TransportSettingsFromTheFiles) {
  auto file = dir.write("c.json", R"({"max_attempts": 2, "idle_timeout_s": 30, "stream": false})");
  LlmConfig c = resolve(flags("m"), {{"idle_timeout_s", 5}}, file.string());
  EXPECT_EQ(c.http.max_attempts, 2);
  EXPECT_EQ(c.http.idle_timeout.count(), 5000) << "op.json beats the config file";
  EXPECT_FALSE(c.stream);
}

// The config file is read with the same bounds as every other JSON kagent reads: nesting 10^4
// deep and duplicate keys are exit-2 errors naming the file, not a stack overflow or a silent pick.
TEST_F(LlmConfigTest, ConfigFileIsReadWithBounds) {
  auto deep = dir.write("deep.json", std::string(10000, '[') + std::string(10000, ']'));
  std::string e = error_of([&] { resolve(flags("m"), nullptr, deep.string()); });
  EXPECT_NE(e.find("deep.json"), std::string::npos) << e;
  auto dup = dir.write("dup.json", R"({"llm": {"model": "a", "model": "b"}})");
  e = error_of([&] { resolve(flags(""), nullptr, dup.string()); });
  EXPECT_NE(e.find("dup.json"), std::string::npos) << e;
  EXPECT_NE(e.find("model"), std::string::npos) << e;
}

// tool_choice like the model: flag, then $KAGENT_TOOL_CHOICE, then the op.json (a generation
// setting: no --allow-op-endpoint needed), then the config file; a bad value names its source.
TEST_F(LlmConfigTest, ToolChoiceFromEachSourceInOrder) {
  EXPECT_EQ(resolve(flags("m")).tool_choice, "auto");
  EXPECT_EQ(resolve(flags("m")).origin["tool_choice"], "default");
  auto file = dir.write("tc.json", R"({"llm": {"tool_choice": "finish"}})");
  LlmConfig c = resolve(flags("m"), nullptr, file.string());
  EXPECT_EQ(c.tool_choice, "finish");
  EXPECT_EQ(c.origin["tool_choice"], "config file " + file.string());
  c = resolve(flags("m"), {{"tool_choice", "evaluate"}}, file.string());
  EXPECT_EQ(c.tool_choice, "evaluate");
  EXPECT_EQ(c.origin["tool_choice"], "op.json");
  env["KAGENT_TOOL_CHOICE"] = "required";
  c = resolve(flags("m"), {{"tool_choice", "evaluate"}}, file.string());
  EXPECT_EQ(c.tool_choice, "required");
  EXPECT_EQ(c.origin["tool_choice"], "env $KAGENT_TOOL_CHOICE");
  EXPECT_NE(c.describe().find("tool_choice required"), std::string::npos) << c.describe();
  LlmFlags f = flags("m");
  f.tool_choice = "auto";
  c = resolve(f, {{"tool_choice", "evaluate"}}, file.string());
  EXPECT_EQ(c.tool_choice, "auto");
  EXPECT_EQ(c.origin["tool_choice"], "flag");
  EXPECT_EQ(c.describe().find("tool_choice"), std::string::npos) << "auto is not worth a mention: " << c.describe();

  env["KAGENT_TOOL_CHOICE"] = "none";
  EXPECT_NE(error_of([&] { resolve(flags("m")); }).find("tool_choice 'none' (from env $KAGENT_TOOL_CHOICE)"),
            std::string::npos);
  env.erase("KAGENT_TOOL_CHOICE");
  EXPECT_NE(error_of([&] {
              resolve(flags("m"), {{"tool_choice", "no such"}});
            }).find("(from op.json)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve(flags("m"), {{"tool_choice", true}});
            }).find("op.json: llm.tool_choice"),
            std::string::npos);
  auto bad = dir.write("bad-tc.json", R"({"tool_choice": "a b"})");
  EXPECT_NE(error_of([&] { resolve(flags("m"), nullptr, bad.string()); }).find("(from config file " + bad.string()),
            std::string::npos);
}

// The limits on one reply: documented defaults, then the config file, the op.json and the flag,
// each beating the one before; out of range is exit 2 naming the key or flag.
TEST_F(LlmConfigTest, ReplyLimitsFromEachSourceInOrder) {
  LlmConfig c = resolve(flags("m"));
  EXPECT_EQ(c.http.max_reply_bytes, size_t{8} << 20);
  EXPECT_EQ(c.max_tool_calls, 32);
  EXPECT_EQ(c.origin["max_tool_calls"], "default");

  auto file = dir.write("c.json", R"({"max_reply_bytes": 65536, "max_tool_calls": 4})");
  c = resolve(flags("m"), nullptr, file.string());
  EXPECT_EQ(c.http.max_reply_bytes, 65536u);
  EXPECT_EQ(c.max_tool_calls, 4);
  c = resolve(flags("m"), {{"max_tool_calls", 5}}, file.string());
  EXPECT_EQ(c.max_tool_calls, 5) << "op.json beats the config file";
  EXPECT_EQ(c.http.max_reply_bytes, 65536u);
  LlmFlags flagged = flags("m");
  flagged.max_tool_calls = 6;
  flagged.max_reply_bytes = 1 << 20;
  c = resolve(flagged, {{"max_tool_calls", 5}}, file.string());
  EXPECT_EQ(c.max_tool_calls, 6);
  EXPECT_EQ(c.http.max_reply_bytes, size_t{1} << 20);
  EXPECT_EQ(c.origin["max_reply_bytes"], "flag");

  EXPECT_NE(error_of([&] {
              resolve(flags("m"), {{"max_tool_calls", 0}});
            }).find("llm.max_tool_calls"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve(flags("m"), {{"max_tool_calls", 2.5}});
            }).find("expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve(flags("m"), {{"max_reply_bytes", 10}});
            }).find("llm.max_reply_bytes"),
            std::string::npos);
  flagged.max_reply_bytes = 5;
  EXPECT_NE(error_of([&] { resolve(flagged); }).find("--max-reply-bytes: expected an integer"), std::string::npos);
}

// A run folder's run.json is a file like an op.json: where the user gives or configures nothing,
// resuming refuses a recorded endpoint other than the default (--allow-op-endpoint takes it);
// what the user gives or configures now is used, whatever was recorded.
TEST_F(LlmConfigTest, AResumedRunKeepsItsEndpointOnlyWhereItIsTheUsersOne) {
  env["GITHUB_TOKEN"] = "ghp_secret";
  LlmConfig c = resume(flags("m"), recorded("openai", "https://api.openai.com/v1/", "OPENAI_API_KEY"));
  EXPECT_EQ(c.base_url, "https://api.openai.com/v1");

  struct Case {
    RecordedEndpoint r;
    std::string says;
  };
  const std::vector<Case> refused = {
      {recorded("openai", "http://127.0.0.1:9999/v1"),
       "runs/x/run.json records base_url 'http://127.0.0.1:9999/v1', but this run's base_url is "
       "'https://api.openai.com/v1' (the default: no flag, environment variable or config file sets it): a run "
       "folder may not choose where requests and the API key go; give --base-url http://127.0.0.1:9999/v1 to resume "
       "against it, or --allow-op-endpoint"},
      {recorded("anthropic", "https://api.anthropic.com"),
       "records provider 'anthropic', but this run's provider is "
       "'openai' (the default"},
      {recorded("openai", "https://api.openai.com/v1", "GITHUB_TOKEN"),
       "records api_key_env 'GITHUB_TOKEN', but this run's api_key_env is 'none'"},
      {recorded("script", "https://api.openai.com/v1", "", "/tmp/turns.jsonl"), "records provider 'script'"},
  };
  for (const Case& k : refused) {
    std::string msg = error_of([&] { resume(flags("m"), k.r); });
    EXPECT_NE(msg.find(k.says), std::string::npos) << msg;
    EXPECT_EQ(msg.find("ghp_secret"), std::string::npos) << msg;
  }
  // A variable that is not set reads no key: recorded, it chooses nothing.
  EXPECT_TRUE(resume(flags("m"), recorded("openai", "https://api.openai.com/v1", "NOT_SET")).api_key.empty());

  // A script run: the script file is part of the endpoint; the base URL of a run that sends nothing is not.
  LlmFlags script = flags("", "script");
  script.script = "/tmp/turns.jsonl";
  EXPECT_EQ(resume(script, recorded("script", "http://elsewhere/v1", "", "/tmp/turns.jsonl")).script,
            "/tmp/turns.jsonl");
  env["KAGENT_PROVIDER"] = "script";
  std::string msg = error_of([&] { resume(flags(""), recorded("script", "", "", "/tmp/other.jsonl")); });
  EXPECT_NE(msg.find("records script '/tmp/other.jsonl', but this run's script is 'none'"), std::string::npos) << msg;
  env.erase("KAGENT_PROVIDER");

  // What the user gives now (flag, environment) or has configured is used, whatever was recorded.
  LlmFlags flagged = flags("m");
  flagged.base_url = "http://localhost:7/v1";
  EXPECT_EQ(resume(flagged, recorded("openai", "http://127.0.0.1:9999/v1")).base_url, "http://localhost:7/v1");
  env["OPENAI_BASE_URL"] = "http://localhost:8000/v1";
  c = resume(flags("m"), recorded("openai", "http://127.0.0.1:9999/v1"));
  EXPECT_EQ(c.base_url, "http://localhost:8000/v1");
  EXPECT_EQ(c.origin["base_url"], "env $OPENAI_BASE_URL");
  env.erase("OPENAI_BASE_URL");
  auto file = dir.write("config.json", R"({"llm": {"base_url": "http://localhost:8000/v1/"}})");
  EXPECT_EQ(resume(flags("m"), recorded("openai", "http://127.0.0.1:9999/v1"), file.string()).base_url,
            "http://localhost:8000/v1");
  env["OPENAI_API_KEY"] = "sk-openai-secret";
  c = resume(flags("m"), recorded("openai", "https://api.openai.com/v1", "GITHUB_TOKEN"));
  EXPECT_EQ(c.api_key, "sk-openai-secret") << "the user's key, not the variable run.json names";

  // --allow-op-endpoint: the run folder's endpoint where the user gives nothing.
  env.erase("OPENAI_API_KEY");
  LlmFlags allow = flags("m");
  allow.allow_op_endpoint = true;
  c = resume(allow, recorded("openai", "http://127.0.0.1:9999/v1", "GITHUB_TOKEN"));
  EXPECT_EQ(c.base_url, "http://127.0.0.1:9999/v1");
  EXPECT_EQ(c.api_key, "ghp_secret");
  EXPECT_EQ(c.origin["base_url"], "runs/x/run.json");
  c = resume(allow, recorded("anthropic", "http://127.0.0.1:9998"));
  EXPECT_EQ(c.provider, ProviderKind::anthropic);
  EXPECT_EQ(c.base_url, "http://127.0.0.1:9998");
  allow.base_url = "http://localhost:7/v1";
  EXPECT_EQ(resume(allow, recorded("openai", "http://127.0.0.1:9999/v1")).base_url, "http://localhost:7/v1");
}
