#pragma once
// The values of prompts/task.md's placeholders, from the operator, the GPU and the tools.
#include <map>
#include <string>

#include "kagent/agent/agent.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/tools/tool.hpp"

namespace kagent::cli {

// `op` as loaded; `with_signature` the same op with its tensors filled in (PyTorch references:
// from the reference server; may lack them when there is no GPU).
std::map<std::string, std::string> task_values(const Op& op, const Op& with_signature, const std::string& baselines,
                                               int gpu, const agent::AgentOptions& budget, const tools::ToolSet& tools,
                                               const std::string& shell_note);

}  // namespace kagent::cli
