// Files kagent reads but the user did not write (an op.json people download, a run folder's
// run.json that may have been edited) cannot hand a host file to the model or send the API key
// elsewhere: an op.json's paths stay inside its folder, and a resumed run's recorded endpoint
// never replaces what the flags, environment and config file give (or, where they give nothing,
// the default) without --allow-op-endpoint. Each refusal is exit 2 before any request; a listener
// on 127.0.0.1 standing in for someone else's endpoint must receive nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../llm/mock_server.hpp"
#include "kagent/common/files.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

const std::string kKey = "sk-untrusted-files-1357";

// Any POST, on any path, answered with an empty Chat Completions reply; what came in is kept.
class Listener {
 public:
  Listener() {
    server_.http().Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req.path + " " + req.get_header_value("Authorization") + " " +
                            req.get_header_value("x-api-key") + " " + req.body);
      }
      json reply = {
          {"choices",
           {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", "stop"}}}},
          {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 1}}}};
      res.set_content(reply.dump(), "application/json");
    });
    server_.start();
  }
  std::string url() const { return server_.url("/v1"); }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  test::MockServer server_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

class UntrustedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir.write("config/kagent/config.json", R"({"llm": {"stream": false, "max_attempts": 1}})");
    std::filesystem::create_directories(dir.path() / "op");
    for (const char* f : {"op.json", "ref.cu"})
      std::filesystem::copy_file(test::examples_dir() / "optimize_demo" / f, dir.path() / "op" / f);
  }

  // kagent with the user's endpoint in the environment (`home`), unless `env` overrides it.
  ProcessResult kagent(const Listener& home, std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"env",
                                     "KAGENT_BASE_URL=" + home.url(),
                                     "KAGENT_MODEL=m",
                                     "KAGENT_API_KEY=" + kKey,
                                     "XDG_CONFIG_HOME=" + (dir.path() / "config").string(),
                                     "KAGENT_CACHE_DIR=" + (dir.path() / "cache").string()};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back((test::binary_dir() / "kagent").string());
    args = test::optimize_anywhere(std::move(args));
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 300s);
  }

  // A run of one turn against `home`, stopped by its budget (so it can be resumed).
  std::filesystem::path started_run(Listener& home) {
    const auto run = dir.path() / "run";
    auto r = kagent(
        home, {"optimize", (dir.path() / "op/op.json").string(), "--out", run.string(), "--no-shell", "--turns", "1"});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(home.requests().size(), 1u) << r.output;
    return run;
  }

  // run.json with its "llm" members replaced by `llm`'s.
  void edit_run_json(const std::filesystem::path& run, const json& llm) {
    json j = json::parse(read_text_file(run / "run.json"));
    for (const auto& [k, v] : llm.items()) j["llm"][k] = v;
    write_file_atomic(run / "run.json", j.dump(2));
  }

  test::TempDir dir;
};

}  // namespace

// "start" and "reference.cuda" naming /proc/self/environ (where the key is) put it in a tool result
// and in the prompt; now the op is refused before any request.
TEST_F(UntrustedFiles, AnOpJsonPathOutsideItsFolderIsRefusedBeforeAnyRequest) {
  Listener home;
  json op = json::parse(read_text_file(dir.path() / "op/op.json"));
  for (const auto& [key, value] : {std::pair<std::string, json>{"start", "/proc/self/environ"},
                                   {"reference", {{"cuda", "/proc/self/environ"}}},
                                   {"start", "../config/kagent/config.json"}}) {
    json hostile = op;
    hostile[key] = value;
    dir.write("op/op.json", hostile.dump());
    auto r = kagent(home, {"optimize", (dir.path() / "op/op.json").string(), "--out", (dir.path() / "r").string(),
                           "--no-shell", "--turns", "1"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("outside the op's folder"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(kKey), std::string::npos) << r.output;
    EXPECT_TRUE(home.requests().empty()) << r.output;
  }
}

// What the user gives or configures nothing for: no flag, no variable, no config file setting.
const std::vector<std::string> kNothingGiven = {
    "KAGENT_BASE_URL=", "OPENAI_BASE_URL=", "ANTHROPIC_BASE_URL=", "KAGENT_PROVIDER="};

// A run.json edited to name another endpoint (base_url, provider, script or api_key_env) where the
// user gives nothing is refused on resume, and nothing reaches the recorded endpoint; what the user
// gives now is used instead of what was recorded; --allow-op-endpoint takes the recorded one.
TEST_F(UntrustedFiles, AResumedRunCannotChooseWhereTheKeyGoes) {
  Listener home, listener;
  const auto run = started_run(home);
  const json recorded = json::parse(read_text_file(run / "run.json"))["llm"];
  EXPECT_EQ(recorded["base_url"], home.url());
  EXPECT_EQ(recorded["api_key_env"], "KAGENT_API_KEY");
  dir.write("turns.jsonl", R"({"content": "hello"})"
                           "\n");
  // Resumes with run.json's llm changed by `llm`, one more turn allowed (one request a turn).
  auto resume = [&](const json& llm, const std::vector<std::string>& env, std::vector<std::string> more = {}) {
    edit_run_json(run, recorded);
    edit_run_json(run, llm);
    const size_t turns = home.requests().size() + listener.requests().size();
    std::vector<std::string> args = {"optimize",   "--resume", run.string(),
                                     "--no-shell", "--turns",  std::to_string(turns + 1)};
    args.insert(args.end(), more.begin(), more.end());
    return kagent(home, args, env);
  };

  struct Case {
    json llm;
    std::vector<std::string> env;
    std::string says;
  };
  // The user's endpoint from the environment, but no key there: the variable run.json names would be read.
  const std::vector<std::string> no_key = {
      "KAGENT_API_KEY=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "KAGENT_PROVIDER=", "OTHER_SECRET=sk-other"};
  const std::vector<Case> cases = {
      {{{"base_url", listener.url()}},
       kNothingGiven,
       "run.json records base_url '" + listener.url() +
           "', but this run's base_url is 'https://api.openai.com/v1' (the default: no flag, environment variable or "
           "config file sets it): a run folder may not choose where requests and the API key go; give --base-url " +
           listener.url() + " to resume against it, or --allow-op-endpoint"},
      {{{"provider", "anthropic"}, {"base_url", listener.url()}}, {}, "records provider 'anthropic'"},
      {{{"provider", "script"}, {"script", (dir.path() / "turns.jsonl").string()}}, {}, "records provider 'script'"},
      {{{"api_key_env", "OTHER_SECRET"}}, no_key, "records api_key_env 'OTHER_SECRET'"},
  };
  for (const Case& c : cases) {
    auto r = resume(c.llm, c.env);
    EXPECT_EQ(r.exit_code, 2) << c.llm << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_TRUE(listener.requests().empty()) << c.llm << r.output;
    EXPECT_EQ(home.requests().size(), 1u) << c.llm << ": refused before any request: " << r.output;
  }

  // The user's endpoint and key (here from the environment) are used, not the recorded ones.
  auto r = resume({{"base_url", listener.url()}, {"api_key_env", "OTHER_SECRET"}}, {"OTHER_SECRET=sk-other"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(listener.requests().empty()) << r.output;
  ASSERT_EQ(home.requests().size(), 2u) << r.output;
  EXPECT_NE(home.requests().back().find("Bearer " + kKey), std::string::npos);

  // --allow-op-endpoint: the user accepts the run folder's endpoint.
  r = resume({{"base_url", listener.url()}}, kNothingGiven, {"--allow-op-endpoint"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(listener.requests().size(), 1u) << r.output;
  EXPECT_EQ(home.requests().size(), 2u) << r.output;
}

// A recorded endpoint that is the user's (here from the config file, nothing in the environment)
// resumes; so does one named by a flag given now.
TEST_F(UntrustedFiles, AResumedRunWhoseEndpointIsTheConfiguredOneResumes) {
  Listener home;
  dir.write("config/kagent/config.json",
            json{{"llm", {{"stream", false}, {"max_attempts", 1}, {"base_url", home.url() + "/"}}}}.dump());
  const auto run = started_run(home);
  auto r = kagent(home, {"optimize", "--resume", run.string(), "--no-shell", "--turns", "2"}, {"KAGENT_BASE_URL="});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(home.requests().size(), 2u) << r.output;
  auto again =
      kagent(home, {"optimize", "--resume", run.string(), "--no-shell", "--turns", "3", "--base-url", home.url()},
             {"KAGENT_BASE_URL="});
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_EQ(home.requests().size(), 3u) << again.output;
}

// bench --agent continues a run folder it finds cut off: the same rule holds there.
TEST_F(UntrustedFiles, BenchAgentResumeCannotChooseWhereTheKeyGoes) {
  Listener home, listener;
  std::filesystem::create_directories(dir.path() / "ops/demo");
  for (const char* f : {"op.json", "ref.cu"})
    std::filesystem::copy_file(dir.path() / "op" / f, dir.path() / "ops/demo" / f);
  const std::vector<std::string> bench = {
      "bench", (dir.path() / "ops").string(),        "--agent", "--turns", "2", "--no-shell",
      "--out", (dir.path() / "agent.jsonl").string()};
  // A run folder as a cut-off batch leaves it: transcript and run.json, no result.json.
  const auto run = dir.path() / "runs/ops/demo";
  auto first = kagent(home, {"optimize", (dir.path() / "ops/demo/op.json").string(), "--out", run.string(),
                             "--no-shell", "--turns", "1"});
  ASSERT_EQ(first.exit_code, 1) << first.output;
  std::filesystem::remove(run / "result.json");
  edit_run_json(run, {{"base_url", listener.url()}});

  auto r = kagent(home, bench, kNothingGiven);
  EXPECT_TRUE(listener.requests().empty()) << r.output;
  EXPECT_EQ(home.requests().size(), 1u) << r.output;
  const std::string results = read_text_file(dir.path() / "agent.jsonl");
  EXPECT_NE(results.find("records base_url"), std::string::npos) << results << r.output;
  EXPECT_EQ(results.find(kKey), std::string::npos) << results;
}
