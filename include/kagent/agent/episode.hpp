#pragma once
// What an episode of the agent starts with, made in one place for `kagent optimize` (optimize_run.cpp)
// and the sessions of `kagent serve` (serve/sessions.cpp): the tools in the order the model sees
// them (files, the shell unless it is off or has no sandbox, the kernel tools), the timing facts an
// Evaluator gives for the task text, and the opening messages. A trainer's session opens with the
// same words and tools a user's run does.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kagent/agent/agent.hpp"
#include "kagent/agent/task_text.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/llm/message.hpp"
#include "kagent/model_tools/file_tools.hpp"
#include "kagent/model_tools/kernel_tools.hpp"
#include "kagent/model_tools/shell_tool.hpp"
#include "kagent/model_tools/workspace.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::agent {

struct EpisodeTools {
  model_tools::ToolSet tools;
  std::string shell_note;  // "" with the shell; else why there is none ("shell is off (--no-shell)")
};

// `sandbox`: the shell's, probed once by the caller (probe_shell_sandbox); nullopt: no shell.
EpisodeTools make_episode_tools(const model_tools::Workspace& ws, model_tools::KernelToolContext& ktx,
                                const std::optional<model_tools::ShellSandbox>& sandbox);

// The op as candidates see it and the timing facts of the task text, from an Evaluator that can
// evaluate (EnvError otherwise): a PyTorch reference resolved and its eager and torch.compile
// baselines timed; a native one's compile baseline; with `floors`, this GPU's measured roofs (a
// few seconds the first time per GPU and driver), else its datasheet bandwidth.
struct ProblemFacts {
  Op with_signature;
  TimingFacts timing;
};
ProblemFacts problem_facts(Evaluator& evaluator, const Op& op, int gpu, bool floors);

// The facts of a machine that cannot evaluate: the op as loaded, and why nothing was measured.
ProblemFacts facts_without_gpu(const Op& op, const std::string& why);

// [system, task]: the prompts and skills of those folders (empty: the defaults) filled in for this
// op, budget and tool set (task_text.hpp, prompts.hpp).
std::vector<llm::Message> episode_opening(const Op& op, const ProblemFacts& facts, int gpu, const AgentOptions& budget,
                                          const EpisodeTools& tools, const std::filesystem::path& prompts_dir = {},
                                          const std::filesystem::path& skills_dir = {});

}  // namespace kagent::agent
