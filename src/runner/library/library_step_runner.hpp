#pragma once
// A library step of a plan, prepared once (descriptors, algorithm, workspace size) outside any
// timed region; enqueue() then only calls the library on the plan's stream. The plan executor
// holds one per gemm/conv entry of the launch list and gives them one shared workspace.
#include <cstddef>
#include <string>

#include "kagent/gpu/driver.hpp"

namespace kagent::runner {

class LibraryStepRunner {
 public:
  virtual ~LibraryStepRunner() = default;
  // Bytes of workspace the chosen algorithm needs (at most the harness's limit).
  virtual size_t workspace_bytes() const = 0;
  // Enqueues the step on `stream`; throws PlanError/CudaError with `context` in the message.
  virtual void enqueue(CUstream stream, CUdeviceptr workspace, size_t workspace_bytes, const std::string& context) = 0;
  // What ran, for reports: "cuBLASLt gemm 128x256x512 f32 (IEEE fp32), epilogue relu+bias".
  virtual const std::string& description() const = 0;
};

// The workspace a step may ask for (cuBLASLt's recommendation for Hopper is 32 MiB; cuDNN's
// algorithms above this are skipped).
inline constexpr size_t kLibraryWorkspaceLimit = size_t{256} << 20;

}  // namespace kagent::runner
