#pragma once
// Which model kagent talks to, and how: provider, base URL, model name, API key. Resolved from,
// in order of precedence, command-line flags, the environment, the op.json "llm" section and the
// config file ($XDG_CONFIG_HOME/kagent/config.json, else ~/.config/kagent/config.json).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/llm/http.hpp"

namespace kagent::llm {

enum class ProviderKind { openai, anthropic, script };
std::string_view provider_name(ProviderKind k);

struct LlmConfig {
  ProviderKind provider = ProviderKind::openai;
  std::string base_url;  // default per provider: https://api.openai.com/v1, https://api.anthropic.com
  std::string model;
  std::string api_key;               // the value; never printed (describe() shows only where it came from)
  std::string api_key_source;        // e.g. "$OPENAI_API_KEY", "" when none
  std::string script;                // ProviderKind::script: the JSONL file of assistant turns
  bool stream = true;                // openai: stream, falling back to non-streaming when a stream breaks
  std::string tool_choice = "auto";  // "auto", "required" or a tool's name (tool_choice.hpp)
  // Tool calls of one reply that are run; the agent loop answers the rest with an error result
  // (max_tool_calls, --max-tool-calls). A reply's bytes are bounded by http.max_reply_bytes.
  int max_tool_calls = 32;
  // The model's context window in tokens as the user gave it (--context-tokens, llm.context_tokens;
  // 1024 to 10^8); 0: not given, so find_context_window asks the server (context_window.hpp).
  int64_t context_tokens = 0;
  HttpOptions http;
  std::map<std::string, std::string> origin;  // field -> "flag", "env $X", "op.json", "config file", "default"

  // One line for people and transcripts: provider, base URL, model, where the key came from, and
  // the tool choice when it is not auto.
  std::string describe() const;
};

// What the command line said (empty: not given).
struct LlmFlags {
  std::string provider, base_url, model, api_key_env, script, tool_choice;
  // --allow-op-endpoint: the op.json's (and, resuming, the run.json's) provider, base_url,
  // api_key_env and script may change the endpoint. Without it a file that would change one is
  // refused (exit 2 naming the key).
  bool allow_op_endpoint = false;
  int64_t max_reply_bytes = 0;  // --max-reply-bytes (0: not given)
  int max_tool_calls = 0;       // --max-tool-calls (0: not given)
  int64_t context_tokens = 0;   // --context-tokens (0: not given)
};

// Where requests and the key go is the user's choice (flags, environment, config file): an
// op.json's "llm" section sets the model and generation settings, and its endpoint keys only with
// flags.allow_op_endpoint (else InputError when they would change anything).
// Reads the environment through `getenv` (tests pass their own). Throws InputError for an
// unknown provider, a bad tool_choice (naming where it came from), a malformed config file or
// op.json section (naming the file and key), or a missing model or script; a missing API key is
// not an error here (local servers need none).
LlmConfig resolve_llm_config(const LlmFlags& flags, const nlohmann::json& op_llm,
                             const std::optional<std::string>& config_file_path = std::nullopt,
                             const std::function<const char*(const char*)>& getenv = nullptr);

// The endpoint a run folder's run.json recorded when the run started (empty fields: not recorded).
struct RecordedEndpoint {
  std::string where;  // the run.json, for messages
  std::string provider, base_url, api_key_env, script;
};

// As resolve_llm_config, for resuming a run that recorded `recorded`. A run folder is a file like
// an op.json (it may have been edited or downloaded): where the user gives or configures a value
// now (flag, environment, config file; for the key, any variable that holds one) that value is
// used, whatever was recorded; where the user gives nothing, a recorded value other than the
// default is InputError saying how to resume against it, unless flags.allow_op_endpoint, which
// takes it. Only what the provider uses is compared (a script run sends nothing; an HTTP run reads
// no script), and an api_key_env naming a variable that is not set reads no key.
LlmConfig resolve_resumed_llm_config(const LlmFlags& flags, const nlohmann::json& op_llm,
                                     const RecordedEndpoint& recorded,
                                     const std::optional<std::string>& config_file_path = std::nullopt,
                                     const std::function<const char*(const char*)>& getenv = nullptr);

// $XDG_CONFIG_HOME/kagent/config.json, else $HOME/.config/kagent/config.json.
std::string default_config_path();

}  // namespace kagent::llm
