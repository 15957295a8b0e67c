// The LLM flags, declared once for every command that talks to a model: optimize (the run),
// bench --agent (passed on to each run, in its options) and doctor (the endpoint it checks).
#include <fmt/format.h>

#include "commands.hpp"

namespace kagent::cli {

void add_llm_flags(CLI::App* sub, llm::LlmFlags* f, LlmFlagsFor who) {
  // Each flag's help as optimize says it; bench says it is for --agent, doctor that it is checked.
  const bool bench = who == LlmFlagsFor::bench, doctor = who == LlmFlagsFor::doctor;
  auto help = [&](const char* optimize_text, const char* bench_text, const char* doctor_text = nullptr) {
    return std::string(bench ? bench_text : doctor && doctor_text ? doctor_text : optimize_text);
  };
  sub->add_option("--provider", f->provider,
                  help("openai, anthropic or script", "--agent: openai, anthropic or script",
                       "LLM provider to check: openai, anthropic or script"));
  sub->add_option("--base-url", f->base_url, help("LLM endpoint base URL", "--agent: LLM endpoint base URL"));
  sub->add_option("--model", f->model, help("Model name", "--agent: model name", "LLM model name"));
  sub->add_option(
      "--api-key-env", f->api_key_env,
      help("Environment variable holding the API key", "--agent: environment variable holding the API key"));
  if (doctor) return;  // the endpoint only: doctor probes tool calling with its own request
  sub->add_flag("--allow-op-endpoint", f->allow_op_endpoint,
                help("Let the op.json's llm section, and with --resume the run's run.json, choose provider, "
                     "base_url, api_key_env and script (by default these files may set the model and generation "
                     "settings only)",
                     "--agent: let an op.json's llm section (or a resumed run's run.json) choose the endpoint (see "
                     "kagent optimize)"));
  sub->add_option("--script", f->script,
                  help("JSONL file of assistant turns (provider script)",
                       "--agent: JSONL file of assistant turns (provider script)"));
  sub->add_option("--tool-choice", f->tool_choice,
                  help("auto (default), required, or a tool's name: whether the model must call a tool each turn",
                       "--agent: auto, required or a tool's name (see kagent optimize)"));
  // The limits on one reply (docs/llm.md): an endpoint that streams without end or
  // a reply of thousands of tool calls must not take the run with it.
  sub->add_option("--max-reply-bytes", f->max_reply_bytes,
                  help("Bytes of one reply before it is abandoned (default 8MiB; units as 512KiB, 16MiB)",
                       "--agent: bytes of one reply before it is abandoned (see kagent optimize)"))
      ->transform(CLI::AsSizeValue(false));
  sub->add_option("--max-tool-calls", f->max_tool_calls,
                  help("Tool calls of one reply that are run (default 32); the rest are answered with an error",
                       "--agent: tool calls of one reply that are run (see kagent optimize)"))
      ->check(CLI::Range(1, 100000));
  sub->add_option("--context-tokens", f->context_tokens,
                  help("The model's context window in tokens (default: what the server says, else 32768; docs/llm.md); "
                       "each request is compacted to fit it with room for the reply",
                       "--agent: the model's context window in tokens (see kagent optimize)"))
      ->check(CLI::Range(int64_t{1024}, int64_t{100000000}));
}

}  // namespace kagent::cli
