#pragma once
// NVRTC compilation of candidates (and native references, which use the same format).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kagent/compile/cache.hpp"
#include "kagent/compile/compile_worker_client.hpp"
#include "kagent/compile/kernel_info.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/plan_check.hpp"

namespace kagent {

struct CompileResult {
  bool ok = false;
  std::string arch;
  std::vector<std::string> options;  // the full option list NVRTC saw
  std::string log;                   // warnings/errors, in the candidate's own line numbers
  std::string cubin;
  std::vector<KernelInfo> kernels;
  bool cache_hit = false;
  double seconds = 0.0;  // wall time of this call (lookup or compile)
  std::string key;
  std::string isolation;  // how NVRTC ran: "namespaces", "process" (weaker, logged) or "in-process"; empty on a hit
  // ok is false and the log says why: the compile was stopped at its time, CPU or memory limit,
  // crashed, or the source was refused for its size. Never cached (a higher limit may let it finish).
  bool stopped = false;
  // What compile_checked checked of the plan before and after compiling, and what it could not
  // (without the operator's shapes), in words for the person or model reading the result.
  std::string plan_checks;
};

// Where NVRTC runs. Model-, user- and CI-written sources compile in the worker (kagent-compile:
// its own process, namespaces and a view of the toolkit's headers only). In-process is for
// measurements of the difference only (benchmarks/compile_latency).
enum class CompileIsolation { worker, in_process };

class Compiler {
 public:
  // cache may be null (no caching).
  Compiler(CudaPaths paths, std::shared_ptr<CompileCache> cache, CompileIsolation isolation = CompileIsolation::worker);

  // Compiles cand.source with the harness options for arch plus cand.plan.options. A compile
  // error, and a compile stopped at a limit (CompileResult::stopped), is a result with ok=false,
  // not an exception; InputError for a bad arch or a refused option (or a bad
  // $KAGENT_COMPILE_TIMEOUT/$KAGENT_COMPILE_MEMORY); EnvError when the compile worker cannot run.
  // A cache hit starts no worker.
  CompileResult compile(const Candidate& cand, const std::string& arch) const;

  // The worker's limits; unless set, compile_limits_from_environment() at each compile.
  void set_limits(const CompileLimits& limits) { limits_ = limits; }

  static std::string nvrtc_version();  // "13.0"

 private:
  CudaPaths paths_;
  std::shared_ptr<CompileCache> cache_;
  CompileIsolation isolation_;
  std::optional<CompileLimits> limits_;
};

// Compiles a plan candidate (or native reference) and checks its plan: tensor names against the op
// (native references; op may be null) and launches against the compiled kernels' parameters.
// A compile error is a result with ok=false; plan problems throw InputError.
CompileResult compile_checked(const Candidate& cand, const Op* op, const Compiler& compiler, const std::string& arch);

// The parameter lists of the compiled kernels, for check_plan_kernels.
std::vector<KernelSignature> kernel_signatures(const std::vector<KernelInfo>& kernels);

}  // namespace kagent
