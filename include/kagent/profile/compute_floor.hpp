#pragma once
// The operator's compute floor beside its memory floor: its FLOPs (counted by PyTorch's
// FlopCounterMode on the reference, or given by a native op.json) at the fastest of this GPU's
// measured roofs that its precision lets a kernel use at the accuracy it demands: under fp32 the
// CUDA cores' FP32 rate and 3xTF32 on the tensor cores (a third of the TF32 mma.sync rate, fp32
// accuracy); under tf32 plain TF32 mma.sync; under fp16/bf16 their mma.sync rates. The task prompt
// and the profile both state it, and the profile's ideal time is the larger of the two floors.
#include <string>
#include <vector>

#include "kagent/protocol/protocol.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::profile {

struct ComputeRoof {
  std::string name;    // "3xTF32 mma.sync", "FP32 FFMA", ...
  double gflops = 0;   // measured (or derived from a measured rate)
  std::string source;  // how: "cuBLAS SGEMM 8192^3", "a third of TF32 mma.sync m16n8k8, measured", ...
};

// The roofs a kernel may use under `precision`, each measured on this GPU (missing ones left out),
// fastest first.
std::vector<ComputeRoof> compute_roofs(const DevicePeaks& p, Precision precision);

struct ComputeFloor {
  double flops = 0;
  double floor_ms = 0;  // flops at the fastest roof; 0 without a roof or without FLOPs
  ComputeRoof roof;     // that roof
  std::vector<ComputeRoof> roofs;
};
ComputeFloor compute_floor(double flops, const DevicePeaks& p, Precision precision);

// One line of every measured roof for the task's GPU section: the copy bandwidth, FP32, TF32,
// 3xTF32, FP16 and BF16 mma.sync, each said to be measured (and when).
std::string measured_roofs_text(const DevicePeaks& p);

// "12.3 GFLOP" / "1.2 TFLOP" / "950 MFLOP".
std::string flops_text(double flops);

}  // namespace kagent::profile
