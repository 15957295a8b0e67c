#include "kagent/llm/config.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/llm/tool_choice.hpp"

namespace kagent::llm {

namespace {

// Keys an op.json "llm" section or the config file may set. Keys are never values here: a file
// names the variable that holds the key (api_key_env), so no secret lives in a checked-in file.
const std::set<std::string> kKeys = {"provider",       "base_url",    "model",           "api_key_env",
                                     "script",         "stream",      "max_attempts",    "connect_timeout_s",
                                     "idle_timeout_s", "tool_choice", "max_reply_bytes", "max_tool_calls",
                                     "context_tokens"};

// The bounds of the limits a flag or file may set.
constexpr int64_t kMinReplyBytes = 1024, kMaxReplyBytes = int64_t{4} << 30;
constexpr int64_t kMinToolCalls = 1, kMaxToolCalls = 100000;
constexpr int64_t kMinContextTokens = 1024, kMaxContextTokens = 100000000;

std::optional<ProviderKind> parse_provider(const std::string& s) {
  if (s == "openai") return ProviderKind::openai;
  if (s == "anthropic") return ProviderKind::anthropic;
  if (s == "script") return ProviderKind::script;
  return std::nullopt;
}

// One source of settings (the op.json section or the config file), checked on the way in.
struct Layer {
  std::string name;  // "op.json" or the config file's path
  nlohmann::json j = nlohmann::json::object();

  std::optional<std::string> str(const std::string& key) const {
    if (!j.contains(key)) return std::nullopt;
    if (!j[key].is_string() || j[key].get<std::string>().empty())
      throw InputError(fmt::format("{}: llm.{}: expected a non-empty string, got {}", name, key, j[key].dump()));
    return j[key].get<std::string>();
  }
  std::optional<double> num(const std::string& key, double lo, double hi) const {
    if (!j.contains(key)) return std::nullopt;
    if (!j[key].is_number() || j[key].get<double>() < lo || j[key].get<double>() > hi)
      throw InputError(
          fmt::format("{}: llm.{}: expected a number in [{}, {}], got {}", name, key, lo, hi, j[key].dump()));
    return j[key].get<double>();
  }
  std::optional<int64_t> integer(const std::string& key, int64_t lo, int64_t hi) const {
    if (!j.contains(key)) return std::nullopt;
    auto v = json_integer(j[key], lo, hi);
    if (!v)
      throw InputError(
          fmt::format("{}: llm.{}: expected an integer in [{}, {}], got {}", name, key, lo, hi, j[key].dump()));
    return v;
  }
  std::optional<bool> flag(const std::string& key) const {
    if (!j.contains(key)) return std::nullopt;
    if (!j[key].is_boolean())
      throw InputError(fmt::format("{}: llm.{}: expected true or false, got {}", name, key, j[key].dump()));
    return j[key].get<bool>();
  }
};

Layer checked_layer(std::string name, const nlohmann::json& j) {
  Layer l{std::move(name), j.is_null() ? nlohmann::json::object() : j};
  if (!l.j.is_object()) throw InputError(fmt::format("{}: llm: expected an object, got {}", l.name, l.j.dump()));
  for (const auto& [k, v] : l.j.items())
    if (!kKeys.count(k))
      throw InputError(
          fmt::format("{}: llm.{}: unknown key (known: provider, base_url, model, api_key_env, script, "
                      "stream, max_attempts, connect_timeout_s, idle_timeout_s, tool_choice, max_reply_bytes, "
                      "max_tool_calls, context_tokens)",
                      l.name, k));
  return l;
}

Layer config_file_layer(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return Layer{path};
  auto j = parse_json_input<nlohmann::json>(read_text_file(path), path);  // bounded: depth, keys, numbers
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object", path));
  // The file may hold other sections later; the LLM settings are its "llm" object, or the top level.
  return checked_layer(path, j.contains("llm") ? j["llm"] : j);
}

std::string_view default_base_url(ProviderKind k) {
  return k == ProviderKind::anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

}  // namespace

std::string_view provider_name(ProviderKind k) {
  switch (k) {
    case ProviderKind::openai:
      return "openai";
    case ProviderKind::anthropic:
      return "anthropic";
    case ProviderKind::script:
      return "script";
  }
  return "openai";
}

std::string default_config_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && *xdg != '\0') return (std::filesystem::path(xdg) / "kagent" / "config.json").string();
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0')
    return (std::filesystem::path(home) / ".config" / "kagent" / "config.json").string();
  return "";
}

std::string LlmConfig::describe() const {
  if (provider == ProviderKind::script) return fmt::format("script {}", script);
  return fmt::format("{} {} model {} ({}){}", provider_name(provider), base_url, model,
                     api_key_source.empty() ? std::string("no API key") : fmt::format("key from {}", api_key_source),
                     is_auto_tool_choice(tool_choice) ? "" : fmt::format(", tool_choice {}", tool_choice));
}

namespace {

// The settings that decide where requests, and with them the API key, are sent. A problem file
// is data people download: on its own it may not choose these (see resolve_llm_config).
constexpr std::array<const char*, 4> kEndpointKeys = {"provider", "base_url", "api_key_env", "script"};

LlmConfig resolve_layers(const LlmFlags& flags, const Layer& op, const Layer& file,
                         const std::function<const char*(const char*)>& getenv_fn) {
  auto env = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  LlmConfig c;

  // Each setting: the first of flag, environment, op.json, config file that has it.
  auto pick = [&](const std::string& field, const std::string& flag, std::initializer_list<const char*> env_names,
                  const std::string& key) -> std::optional<std::string> {
    if (!flag.empty()) {
      c.origin[field] = "flag";
      return flag;
    }
    for (const char* e : env_names)
      if (auto v = env(e)) {
        c.origin[field] = fmt::format("env ${}", e);
        return v;
      }
    if (auto v = op.str(key)) {
      c.origin[field] = "op.json";
      return v;
    }
    if (auto v = file.str(key)) {
      c.origin[field] = "config file " + file.name;
      return v;
    }
    return std::nullopt;
  };

  if (auto p = pick("provider", flags.provider, {"KAGENT_PROVIDER"}, "provider")) {
    auto kind = parse_provider(*p);
    if (!kind)
      throw InputError(
          fmt::format("provider '{}' (from {}): expected openai, anthropic or script", *p, c.origin["provider"]));
    c.provider = *kind;
  } else if (env("ANTHROPIC_API_KEY") && !env("OPENAI_API_KEY") && !env("KAGENT_API_KEY") && !env("OPENAI_BASE_URL") &&
             !env("KAGENT_BASE_URL")) {
    c.provider = ProviderKind::anthropic;  // the only credentials around are Anthropic's
    c.origin["provider"] = "default ($ANTHROPIC_API_KEY is set)";
  } else {
    c.origin["provider"] = "default";
  }

  const bool anthropic = c.provider == ProviderKind::anthropic;
  if (auto u = pick("base_url", flags.base_url,
                    {"KAGENT_BASE_URL", anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL"}, "base_url")) {
    c.base_url = *u;
  } else {
    c.base_url = default_base_url(c.provider);
    c.origin["base_url"] = "default";
  }
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  if (auto m = pick("model", flags.model, {"KAGENT_MODEL"}, "model")) c.model = *m;
  if (auto s = pick("script", flags.script, {}, "script")) c.script = *s;
  // A generation setting like the model: an op.json may set it without --allow-op-endpoint.
  if (auto t = pick("tool_choice", flags.tool_choice, {"KAGENT_TOOL_CHOICE"}, "tool_choice")) {
    check_tool_choice(*t, c.origin["tool_choice"]);
    c.tool_choice = *t;
  } else {
    c.origin["tool_choice"] = "default";
  }

  // The key: a variable named by --api-key-env, else the usual variables, else the variable an
  // op.json or the config file names.
  std::optional<std::string> key_var;
  if (!flags.api_key_env.empty()) {
    key_var = flags.api_key_env;
    if (!env(key_var->c_str()))
      throw EnvError(fmt::format("--api-key-env {}: that variable is not set in the environment", *key_var));
  } else {
    for (const char* e : {"KAGENT_API_KEY", anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"})
      if (env(e)) {
        key_var = e;
        break;
      }
    if (!key_var) key_var = op.str("api_key_env");
    if (!key_var) key_var = file.str("api_key_env");
  }
  if (key_var) {
    if (auto v = env(key_var->c_str())) {
      c.api_key = *v;
      c.api_key_source = "$" + *key_var;
    }
  }

  // Transport settings from the files only (op.json first: it is the more specific).
  auto seconds = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  for (const Layer* l : {&file, &op}) {  // the later layer wins
    if (auto v = l->flag("stream")) c.stream = *v;
    if (auto v = l->num("max_attempts", 1, 20)) c.http.max_attempts = static_cast<int>(*v);
    if (auto v = l->num("connect_timeout_s", 0.1, 600)) c.http.connect_timeout = seconds(*v);
    if (auto v = l->num("idle_timeout_s", 0.1, 3600)) c.http.idle_timeout = seconds(*v);
  }
  // The limits on one reply: a flag, else the files (op.json first).
  auto limit = [&](const char* key, int64_t flag, int64_t lo, int64_t hi) -> std::optional<int64_t> {
    if (flag != 0) {
      if (flag < lo || flag > hi) {
        std::string name = key;
        std::replace(name.begin(), name.end(), '_', '-');
        throw InputError(fmt::format("--{}: expected an integer in [{}, {}], got {}", name, lo, hi, flag));
      }
      c.origin[key] = "flag";
      return flag;
    }
    for (const Layer* l : {&op, &file})
      if (auto v = l->integer(key, lo, hi)) {
        c.origin[key] = l == &op ? "op.json" : "config file " + file.name;
        return v;
      }
    c.origin[key] = "default";
    return std::nullopt;
  };
  if (auto v = limit("max_reply_bytes", flags.max_reply_bytes, kMinReplyBytes, kMaxReplyBytes))
    c.http.max_reply_bytes = static_cast<size_t>(*v);
  if (auto v = limit("max_tool_calls", flags.max_tool_calls, kMinToolCalls, kMaxToolCalls))
    c.max_tool_calls = static_cast<int>(*v);
  // The model's context window, like the limits (0: found from the server, llm/context_window.hpp).
  if (auto v = limit("context_tokens", flags.context_tokens, kMinContextTokens, kMaxContextTokens))
    c.context_tokens = *v;

  return c;
}

// The last check of a resolved configuration: a script run has its file, any other a model.
void require_model_or_script(const LlmConfig& c, const Layer& file) {
  if (c.provider == ProviderKind::script) {
    if (c.script.empty()) throw InputError("provider script: no script file (--script FILE or llm.script)");
  } else if (c.model.empty()) {
    throw InputError(
        fmt::format("no model for provider {}: set --model, $KAGENT_MODEL, llm.model in the op.json or "
                    "\"model\" in {}",
                    provider_name(c.provider), file.name.empty() ? "the config file" : file.name));
  }
}

// What the resolved configuration says for an endpoint key, to compare with an op.json's or a
// run.json's value.
std::string resolved_value(const LlmConfig& c, const std::string& key) {
  if (key == "provider") return std::string(provider_name(c.provider));
  if (key == "base_url") return c.base_url;
  if (key == "api_key_env") return c.api_key_source.empty() ? "" : c.api_key_source.substr(1);
  return c.script;
}

// Flags, environment, op.json and config file; the op.json's endpoint keys only with
// --allow-op-endpoint or where they change nothing.
LlmConfig resolve_with_op(const LlmFlags& flags, const Layer& op, const Layer& file,
                          const std::function<const char*(const char*)>& getenv_fn) {
  if (flags.allow_op_endpoint) return resolve_layers(flags, op, file, getenv_fn);
  // Without --allow-op-endpoint the op.json keeps its model and generation settings; its endpoint
  // keys are accepted only where they change nothing.
  Layer settings = op;
  for (const char* k : kEndpointKeys) settings.j.erase(k);
  LlmConfig c = resolve_layers(flags, settings, file, getenv_fn);
  for (const char* k : kEndpointKeys) {
    auto v = op.str(k);
    if (!v) continue;
    std::string want = *v;
    if (std::string_view(k) == "base_url")
      while (!want.empty() && want.back() == '/') want.pop_back();
    if (want == resolved_value(c, k)) continue;
    throw InputError(fmt::format(
        "op.json: llm.{}: a problem file may not choose where requests and the API key go ({} here is '{}', "
        "from {}); set it with a flag, the environment or your config file ({}), or pass --allow-op-endpoint "
        "to accept the op.json's",
        k, k, resolved_value(c, k).empty() ? "none" : resolved_value(c, k),
        c.origin.count(k) ? c.origin.at(k) : (std::string_view(k) == "api_key_env" ? "the usual variables" : "default"),
        default_config_path()));
  }
  return c;
}

// The flag that sets an endpoint key, and what it holds in `flags`.
std::string& flag_of(LlmFlags& flags, std::string_view key) {
  if (key == "provider") return flags.provider;
  if (key == "base_url") return flags.base_url;
  if (key == "api_key_env") return flags.api_key_env;
  return flags.script;
}

const std::string& recorded_value(const RecordedEndpoint& r, std::string_view key) {
  if (key == "provider") return r.provider;
  if (key == "base_url") return r.base_url;
  if (key == "api_key_env") return r.api_key_env;
  return r.script;
}

std::string_view flag_name(std::string_view key) {
  if (key == "provider") return "--provider";
  if (key == "base_url") return "--base-url";
  if (key == "api_key_env") return "--api-key-env";
  return "--script";
}

// Whether a provider of this kind uses the key: a script run sends no request (so no base URL or
// key), an HTTP run reads no script.
bool uses(ProviderKind p, std::string_view key) {
  if (key == "provider") return true;
  if (key == "script") return p == ProviderKind::script;
  return p != ProviderKind::script;
}

}  // namespace

LlmConfig resolve_llm_config(const LlmFlags& flags, const nlohmann::json& op_llm,
                             const std::optional<std::string>& config_file_path,
                             const std::function<const char*(const char*)>& getenv_fn) {
  const Layer op = checked_layer("op.json", op_llm);
  const Layer file = config_file_layer(config_file_path ? *config_file_path : default_config_path());
  LlmConfig c = resolve_with_op(flags, op, file, getenv_fn);
  require_model_or_script(c, file);
  return c;
}

LlmConfig resolve_resumed_llm_config(const LlmFlags& flags, const nlohmann::json& op_llm,
                                     const RecordedEndpoint& recorded,
                                     const std::optional<std::string>& config_file_path,
                                     const std::function<const char*(const char*)>& getenv_fn) {
  const Layer op = checked_layer("op.json", op_llm);
  const Layer file = config_file_layer(config_file_path ? *config_file_path : default_config_path());
  auto is_set = [&](const std::string& name) {
    const char* v = getenv_fn ? getenv_fn(name.c_str()) : std::getenv(name.c_str());
    return v != nullptr && *v != '\0';
  };
  // Recorded values as the resolved configuration writes them (no trailing '/' on a URL); an
  // api_key_env naming an unset variable reads no key, so it chooses nothing.
  auto recorded_for = [&](std::string_view key) {
    std::string want = recorded_value(recorded, key);
    if (key == "base_url")
      while (!want.empty() && want.back() == '/') want.pop_back();
    if (key == "api_key_env" && !want.empty() && !is_set(want)) want.clear();
    return want;
  };

  // Whether the user chose the key's value for this run (a flag, the environment, the config file,
  // an op.json they allowed; for the key, any variable that holds one): then it stands, whatever
  // was recorded. Otherwise it is kagent's default, which only --allow-op-endpoint lets the
  // recorded value replace.
  auto users_choice = [](const LlmConfig& c, std::string_view key) {
    if (key == "api_key_env") return !c.api_key_source.empty();
    if (key == "script") return !c.script.empty();
    auto it = c.origin.find(std::string(key));
    return it != c.origin.end() && !it->second.starts_with("default");
  };
  LlmFlags adopted = flags;
  std::vector<std::string> taken;
  // Taking a recorded provider changes which keys it uses and their defaults: look again after
  // each key taken (each at most once: taken, it is a flag).
  for (size_t pass = 0;; ++pass) {
    LlmConfig c = resolve_with_op(adopted, op, file, getenv_fn);
    std::optional<std::string_view> differs;
    for (std::string_view k : kEndpointKeys) {
      const std::string want = recorded_for(k);
      if (want.empty() || !uses(c.provider, k) || users_choice(c, k)) continue;
      if (want != resolved_value(c, std::string(k))) {
        differs = k;
        break;
      }
    }
    if (!differs) {
      for (const std::string& k : taken) c.origin[k] = recorded.where;
      require_model_or_script(c, file);
      return c;
    }
    const std::string key(*differs), want = recorded_for(*differs), have = resolved_value(c, key);
    if (!flags.allow_op_endpoint || pass >= kEndpointKeys.size())
      throw InputError(fmt::format(
          "{} records {} '{}', but this run's {} is '{}' (the default: no flag, environment variable or config "
          "file sets it): a run folder may not choose where requests and the API key go; give {} {} to resume "
          "against it, or --allow-op-endpoint",
          recorded.where, key, want, key, have.empty() ? "none" : have, flag_name(key), want));
    flag_of(adopted, key) = want;
    taken.push_back(key);
  }
}

}  // namespace kagent::llm
