#pragma once
// One ModelNew solution's worker process (tools/kagent_modelnew/worker.py) seen from kagent: it
// imports the solution in a jail (reference/python_child.hpp: its own namespaces, a view of the
// system, Python, the toolkit, the solution and problem files, writes only to the solution's build
// folder; the runner's environment allowlist), builds ModelNew under
// the reference's seed, runs it on the reference server's tensors and times it. One worker per
// evaluation: nothing a solution leaves behind in its process reaches the next evaluation.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/protocol/child_client.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent {

// How a request to the worker ended when it did not answer ok.
struct WorkerFailure {
  enum class Kind { none, raised, build, tamper, timeout, crash };
  Kind kind = Kind::none;
  std::string message;              // the exception (with the traceback's tail) or what happened
  std::vector<std::string> tamper;  // what the solution replaced (Kind::tamper)
  explicit operator bool() const { return kind != Kind::none; }
};

// The result of one worker request: the reply's body when ok, else the failure.
struct WorkerReply {
  nlohmann::json body;
  WorkerFailure failure;
};

struct ModelNewWorkerOptions {
  int gpu = 0;
  std::filesystem::path build_dir;  // this solution's: torch's extensions, Triton's cache, temporary files
  std::filesystem::path exec_dir;   // where kagent-sandbox-exec is (beside kagent-runner): the fallback
  // The files the worker reads besides Python, the toolkit and tools/: the solution and the problem.
  std::vector<std::filesystem::path> read_only;
  // The compile target ("sm_90a"): torch's extensions are built for it (TORCH_CUDA_ARCH_LIST), the
  // same whether or not the process sees the GPU, so that a build made ahead is the one evaluated.
  std::string arch;
  // false: no GPU in the worker's jail (its device files are absent, CUDA_VISIBLE_DEVICES is empty):
  // the "build" request ahead of the evaluation, which must not disturb a timing on the GPU.
  bool gpu_access = true;
};

// "sm_90a" -> "9.0", the form TORCH_CUDA_ARCH_LIST takes (torch's own choice for the GPU has no
// suffix either); "" for an arch it cannot read.
std::string torch_arch_list(const std::string& arch);

class ModelNewWorker {
 public:
  // Starts nothing until the first request. sandbox_warning() says when the sandbox is weaker
  // than documented (no kagent-sandbox-exec beside kagent, no Landlock, no network namespace).
  explicit ModelNewWorker(ModelNewWorkerOptions o);
  // Kills the worker (nothing it holds is needed after its evaluation): no second of Python and
  // CUDA teardown between one evaluation and the next.
  ~ModelNewWorker();
  ModelNewWorker(const ModelNewWorker&) = delete;
  ModelNewWorker& operator=(const ModelNewWorker&) = delete;

  WorkerReply request(nlohmann::json req, std::chrono::milliseconds timeout, const std::string& what);
  const std::string& sandbox_warning() const { return warning_; }
  // Whether its process, once started, is still there (ChildClient::alive).
  bool alive() { return client_.alive(); }
  // Whether a request has started the worker (and its hello said torch imports).
  const nlohmann::json& hello() const { return client_.hello(); }
  // Where this solution's build lives: the kagent cache's modelnew/<source hash>. It is the one
  // folder the worker may write, Triton's cache included, so that no solution reaches another's.
  static std::filesystem::path build_dir_for(const std::string& source);

 private:
  ModelNewWorkerOptions opt_;
  std::string warning_;
  ChildClient client_;
};

}  // namespace kagent
