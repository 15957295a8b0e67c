#pragma once
// Runs a candidate's launch plan: binds tensor and scalar arguments, checks them against each
// kernel's parameter list (cuFuncGetParamInfo), checks launch dimensions and shared memory,
// allocates scratch, prepares library steps (cuBLASLt, cuDNN: library/), and enqueues the
// launches in order on the device's one stream. A plan with "graph": true is captured into a CUDA
// graph on its first run and replayed from then on (same buffers for the executor's lifetime).
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device.hpp"
#include "guarded_buffer.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/device_constants.hpp"
#include "kagent/spec/op.hpp"
#include "library/library_step_runner.hpp"

namespace kagent::runner {

struct DeviceTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  bool is_input = false;  // an operator input: library steps may not write it
};
using TensorMap = std::map<std::string, DeviceTensor>;

class PlanExecutor {
 public:
  // `who` names the plan in messages ("candidate cand.cu"). Throws PlanError for a plan that
  // cannot run as written, CudaError for driver failures.
  PlanExecutor(const Device& dev, const Module& mod, const Candidate& cand, const TensorMap& tensors,
               const std::vector<ScalarArg>& scalars, std::string who);

  // Enqueues every launch. With sync_each, reports a phase before each launch and synchronizes
  // after it, so a fault or hang is attributed to its launch (used for correctness runs).
  void run(bool sync_each, const std::string& context);
  // Enqueues launch i only (per-launch timing records an event between launches), never from the graph.
  void launch(size_t i, const std::string& context);
  size_t launch_count() const { return launches_.size(); }
  // The kernel's name, or what a library step runs ("cuBLASLt gemm 128x256x512 f32 (IEEE fp32)").
  const std::string& kernel_of(size_t i) const { return launches_[i].kernel; }
  // Library steps launch kernels of their own (how many is the library's choice): CUPTI then sees
  // at least launch_count() kernels per run, not exactly that many.
  bool has_library_steps() const { return library_steps_ > 0; }
  bool is_library_step(size_t i) const { return launches_[i].library != nullptr; }
  bool uses_graph() const { return graph_; }
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;
  // Fills the scratch buffers with 0xFF bytes (stream-ordered), so nothing survives across calls.
  void poison_scratch();
  size_t scratch_bytes() const;
  // The scratch buffers, each between guard bands (BoundsCheck fills and checks them).
  std::vector<const GuardedBuffer*> scratch() const;

 private:
  struct Prepared {
    std::string kernel;
    CUfunction fn = nullptr;
    std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
    unsigned smem = 0;
    std::vector<std::array<unsigned char, 8>> values;  // argument bytes
    std::vector<void*> ptrs;                           // into values: what cuLaunchKernel reads
    std::unique_ptr<LibraryStepRunner> library;        // a library step instead of a kernel
  };
  void prepare_launch(size_t index, const Launch& l, const TensorMap& tensors);
  void prepare_library_step(size_t index, const Launch& l, const TensorMap& tensors);
  void enqueue(size_t i, const std::string& what);
  void capture_graph(const std::string& context);
  void prepare_cluster(Prepared& p, const std::string& where);
  // An operator scalar by name, else a device constant (num_sms).
  std::optional<ExprValue> scalar(std::string_view name) const;

  const Device& dev_;
  std::string who_;
  std::vector<ScalarArg> scalars_;
  DeviceConstants device_constants_;
  std::vector<GuardedBuffer> scratch_;
  std::vector<Prepared> launches_;
  size_t library_steps_ = 0;
  std::unique_ptr<DeviceBuffer> workspace_;  // shared by the library steps (they run one after another)
  bool graph_ = false;
  CUgraph graph_template_ = nullptr;
  CUgraphExec graph_exec_ = nullptr;
};

}  // namespace kagent::runner
