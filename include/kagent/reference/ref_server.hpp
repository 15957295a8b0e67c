#pragma once
// The Python reference server (tools/kagent_ref) seen from kagent: one long-lived process per
// GPU that imports a PyTorch problem file in isolation, builds its model under a seed, reports
// the operator's signature as a candidate sees it, and times torch eager and torch.compile with
// the runner's protocol (baselines cached on disk).
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/protocol/child_client.hpp"
#include "kagent/protocol/stats.hpp"
#include "kagent/reference/library_times.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

struct RefScalar {
  std::string name;
  nlohmann::json value;
  std::string type;  // "int", "float" or "bool"
};

// One output of the reference as the server saw it at load: what the degenerate and weak-reference
// checks need (kagent/protocol/reference_quality.hpp).
struct RefOutputStats {
  uint64_t numel = 0, zeros = 0;
  double zero_share = 0;
  std::optional<double> min, max, min_abs;  // finite values; none when there are none
};

struct RefSignature {
  std::vector<TensorSpec> inputs;            // forward's tensor parameters, by name
  std::vector<TensorSpec> draws;             // what forward draws (tools/kagent_ref/draws.py), .drawn set
  std::vector<RefScalar> scalars;            // forward's non-tensor parameters
  std::vector<TensorSpec> params;            // state_dict entries, '.' replaced by '_'
  std::vector<TensorSpec> outputs;           // out, or out0, out1, ...
  std::optional<std::string> degenerate;     // why the reference output cannot tell right from empty
  std::vector<RefOutputStats> output_stats;  // per output, in order
  bool allow_tf32 = false;                   // the numerics the reference runs with (the precision's)
  std::string source_hash, gpu_name, torch_version;
  std::string baselines_protocol;  // how the server measures baselines (a shared file's entries must match)
  // One forward call's FLOPs by PyTorch's FlopCounterMode (tools/kagent_ref/flops.py): matrix
  // products, convolutions, attention; largest operator first. None with flops_note saying why.
  std::optional<double> flops;
  std::vector<std::pair<std::string, double>> flops_by_op;
  std::string flops_note;
};

// What the prompt says of where `s.flops` came from: "PyTorch's FlopCounterMode on the reference
// (aten.addmm 2.1 TFLOP, ...): matrix products, convolutions and attention; elementwise work not
// counted".
std::string flops_source_text(const RefSignature& s);

struct RefBaselines {
  TimingSummary eager;
  std::optional<TimingSummary> compile;
  std::string compile_error;  // when torch.compile could not build or run the model
  bool cached = false;
  std::string key;
  bool allow_tf32 = false;  // the numerics eager and torch.compile ran with (part of the cache key)
  // Where they came from: "measured", "cache" (this machine's, measured earlier) or "file:PATH"
  // (a shared baselines file, eval/baselines_file.hpp).
  std::string source;
  std::string gpu_name, torch_version, protocol, precision;  // what they were measured on and by
};

class RefServer {
 public:
  // Starts `python3 -m kagent_ref` for one problem file: the server runs that file's code, so it
  // serves that problem alone (a problem cannot reach another's reference or baselines), in a
  // sandbox that shows it the file, Python, the toolkit and the GPU, and lets it write only its
  // own cache folder (cache_dir_for). Throws EnvError when python3 or torch is missing.
  RefServer(int gpu, const std::filesystem::path& problem);
  ~RefServer();

  // A spare: a server started before its problem is known, so that a new problem's start does not
  // wait for the jail, Python, torch and the CUDA context. Its jail shows it, besides tools/, an
  // empty folder of its own (read-only) and a cache folder of its own (writable); adopt() puts the
  // one problem file it will ever serve into the first. It runs no problem code before adopt(), and
  // nothing else is shown to it after: one jail per problem file holds.
  static std::unique_ptr<RefServer> spare(int gpu);
  // Gives a spare its problem: the file copied into its folder, the problem's cached baselines into
  // its cache folder (baselines it measures are copied back: cache_dir_for(problem) stays the
  // problem's cache). Throws InputError when the file cannot be read.
  void adopt(const std::filesystem::path& problem);
  bool adopted() const { return !problem_.empty(); }

  // Loads the op's problem file. Problem errors (syntax error, exception in get_inputs, ...) are
  // InputError with the traceback's last lines; out of GPU memory is EnvError.
  RefSignature load(const Op& op, Precision precision, uint64_t seed);
  RefBaselines baselines(bool refresh, const StopRule& rule);
  // The reference's GEMM, convolution and attention calls, each timed alone (library_times.hpp);
  // cached beside the baselines. Runs kernels: the caller holds the GPU lock.
  RefLibraryTimes library_times(bool refresh);
  // Makes a trial's inputs under `seed`, runs the reference on them (and in float64 where that
  // fits) and returns {"tensors": the tensors as CUDA IPC references (IpcTensorRef JSON, signature
  // order, then the outputs' fp64 twins "NAME@f64"), "fp64_note": why there are no twins, or null,
  // "draws": {"seed", "rng_after"} where forward draws random numbers (the generator state its
  // forward started from and ended in, for a ModelNew worker), "precision_figures": the reference
  // at the precisions the problem forbids against fp64 (protocol/output_rules.hpp)}: the runner's
  // answer to its "trial" need. They stay valid until the next trial or load.
  nlohmann::json trial(uint64_t seed);
  // torch imported and the GPU's CUDA context made, no kernel run: a problem started ahead does this
  // before it takes the GPU lock for its first run.
  void warm();
  // A spare's libraries made ready: each one's first kernel run on tiny tensors (cuBLAS and cuBLASLt
  // at every dtype a load or trial uses, cuDNN's convolutions, attention), so that a problem adopted
  // later pays only its own kernels' loading. Runs kernels: the caller holds the GPU lock.
  void warm_libraries();
  // Lets go of the last trial's (and load's) tensors and torch's cached blocks: a problem kept warm
  // while others are evaluated holds its model and context only. Returns what torch still reserves.
  uint64_t release();
  // Whether the server still runs (one that died while idle is started afresh).
  bool alive() { return client_.alive(); }

  static std::string tools_dir();  // $KAGENT_TOOLS_DIR, else the source tree's tools/
  // The one folder the server of `problem` may write: baselines, torch.compile's and Triton's
  // caches, temporary files. Keyed by the file's contents, under the kagent cache's reference/.
  static std::filesystem::path cache_dir_for(const std::filesystem::path& problem);
  const std::filesystem::path& problem() const { return problem_; }
  pid_t pid() const { return client_.pid(); }
  const std::string& sandbox_warning() const { return client_.sandbox_warning(); }

 private:
  struct SpareTag {};
  RefServer(int gpu, SpareTag);
  nlohmann::json call(nlohmann::json req, std::chrono::milliseconds timeout, const std::string& what);
  // The file's path as the server sees it (a spare's copy), and its error text with the copy's path
  // named as the problem's.
  std::string problem_in_jail() const;
  std::string as_problem(std::string text) const;

  // A folder removed when the server is gone (a spare's): declared before client_, so the
  // server ends first.
  struct OwnedDir {
    std::filesystem::path path;
    ~OwnedDir();
  };
  int gpu_;
  std::filesystem::path problem_, cache_dir_;
  OwnedDir owned_;                   // a spare's folder (its slot and cache), else empty
  std::filesystem::path slot_file_;  // a spare's copy of its problem file
  // A spare's measurement (`kind` "baselines" or "library_times", file `key`.json) copied from its own
  // cache folder into its problem's, where a later server for the problem finds it.
  void keep_in_problem_cache(const std::string& kind, const std::string& key) const;
  std::filesystem::path home_cache_;  // a spare's problem's own cache folder (cache_dir_for)
  ChildClient client_;
};

}  // namespace kagent
