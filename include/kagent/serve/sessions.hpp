#pragma once
// The agent's episodes as sessions of `kagent serve` (docs/environment.md): a trainer owns the
// model and hands each reply's tool calls to a session, which runs them with the tools `kagent
// optimize` gives its model (agent/episode.hpp, model_tools/tool_call.hpp) in a workspace of its
// own, and answers what the model reads. Evaluations go through the service's GPU queue; a session
// runs one step at a time, so it has at most one evaluation waiting and the queue's order is fair
// among sessions. Finish evaluates the final candidate once more by the full protocol and ends the
// episode with its reward; a limit ends it too, with its reason.
//
// Each session lives in a folder of the sessions root: workspace/ (the model's files), the
// transcript (transcript.jsonl, the events of `kagent optimize`'s), candidates/ and best.cu or
// .py (agent/run_record.hpp), summary.json at the end. Closing or reaping removes the workspace;
// without --sessions-dir the root is a private temporary folder and the whole folder goes.
//
// The calls block (a tool may run for minutes): the service runs them off its HTTP threads.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "kagent/serve/eval_queue.hpp"
#include "kagent/serve/request.hpp"
#include "kagent/serve/session_request.hpp"

namespace kagent::serve {

struct SessionOptions {
  std::filesystem::path dir;  // --sessions-dir: episodes kept there; empty: a temporary root, removed
  size_t max_sessions = 256;  // open at once (429 beyond)
  double idle_s = 900;        // a session without a request this long is reaped
  SessionLimits most;         // the most a session may ask for (its defaults are SessionLimits' within these)
  std::filesystem::path prompts, skills;  // empty: the defaults (agent/prompts.hpp)
  bool shell = true;                      // false: no session gets the shell tool
};

class Sessions {
 public:
  // `queue`: the service's (null without a GPU: evaluations say `no_gpu`). `gpu`: the GPU the task
  // text describes (the service's first).
  Sessions(SessionOptions options, RequestLimits limits, std::filesystem::path problems_root, EvalQueue* queue,
           std::string no_gpu, int gpu);
  ~Sessions();  // closes every session
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // POST /v1/sessions: 200 {"session_id", "messages", "tools", "limits", "reward"}; 400 a bad field,
  // 404 no such problem, 422 a problem that does not load, 429 at --max-sessions.
  Answer open(std::string_view body);
  // POST /v1/sessions/{id}/step: 200 {"observations", "done", "done_reason", "reward", ...}; 404 no
  // such session, 409 a step of it still running or its episode over, 400 a bad body.
  Answer step(const std::string& id, std::string_view body);
  // POST /v1/sessions/{id}/close: the episode's summary; the same again for a closed one.
  Answer close(const std::string& id);
  // GET /v1/sessions/{id}: its state (open, done, closed) and counters.
  Answer state(const std::string& id);
  // Closes the sessions idle past SessionOptions::idle_s; how many.
  size_t reap();
  size_t open_count() const;
  const std::filesystem::path& root() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kagent::serve
