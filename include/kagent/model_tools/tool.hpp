#pragma once
// A tool the model may call: its JSON-schema'd spec and what running it does. Tools never throw
// for the model's mistakes: bad arguments, a missing file, a compile error are results the model
// reads (is_error) and can correct. Only kagent's own failures (no GPU, ...) are exceptions.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/llm/message.hpp"

namespace kagent::model_tools {

// What the agent loop learns from a call is in its result, never in the tool's name: a tool that
// ends the run says so (ends_run), one that evaluated a candidate gives its reward tier.
struct ToolResult {
  std::string text;                        // what the model reads
  bool is_error = false;                   // the call did not do what was asked (the text says why)
  nlohmann::json record;                   // structured data for the transcript (an evaluation's report, ...)
  bool ends_run = false;                   // the run is over after this call (finish); ignored when is_error
  std::optional<int> tier = std::nullopt;  // the reward tier of the evaluation this call ran (evaluate, profile)
};

// The model's mistake, in words it can act on ("path escapes the workspace: ../x").
class ToolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Deadline = std::chrono::steady_clock::time_point;

class Tool {
 public:
  virtual ~Tool() = default;
  virtual llm::ToolSpec spec() const = 0;
  // Throws ToolError for the model's mistakes; the agent loop turns them into error results.
  virtual ToolResult run(const nlohmann::json& args) = 0;

  // When the run's time budget ends. The agent loop sets it before each call; a tool that can
  // take long (a shell command, an evaluation) is cut off by then, not only the turn after.
  void set_deadline(std::optional<Deadline> deadline) { deadline_ = deadline; }
  std::optional<Deadline> deadline() const { return deadline_; }

 protected:
  // The time left until the deadline, at least a second (a call that was started gets to
  // answer); nullopt when there is no deadline.
  std::optional<std::chrono::milliseconds> time_left() const;

 private:
  std::optional<Deadline> deadline_;
};

using ToolSet = std::vector<std::unique_ptr<Tool>>;

// Argument helpers for tools: a required string, an optional integer; ToolError naming the
// argument and what was expected otherwise.
std::string arg_string(const nlohmann::json& args, const std::string& name);
std::optional<int64_t> arg_int(const nlohmann::json& args, const std::string& name, int64_t lo, int64_t hi);

// Text longer than max_bytes cut to its head and tail (about 2:1) with a marker line saying how
// many bytes and lines were left out; cuts fall on line boundaries where one is near.
std::string cut_middle(const std::string& text, size_t max_bytes);

}  // namespace kagent::model_tools
