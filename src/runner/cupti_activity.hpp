#pragma once
// CUPTI's Activity API in the runner, loaded with dlopen on first use (a runner without CUPTI
// still evaluates; the cross-check then says why it did not run): every kernel the GPU ran
// between start() and stop(), with its GPU timestamps, stream and context. The evaluation uses
// it to check the event timing (the timed span must cover the kernels CUPTI saw, all on the
// plan's stream and context) and the profile for a per-kernel breakdown.
#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kagent::runner {

struct KernelRecord {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;  // GPU timestamps
  uint32_t stream_id = 0, context_id = 0;
  bool device_launched = false;  // launched from device code (dynamic parallelism)
  double ms() const { return static_cast<double>(end_ns - start_ns) * 1e-6; }
};

class KernelActivity {
 public:
  // The process's one instance, or nullptr with *why set (no libcupti, or CUPTI refused: another
  // profiler attached, no permission).
  static KernelActivity* get(std::string* why);

  // Starts collecting kernel records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: kernels keep running
  // concurrently as they would without it).
  void start();
  // Stops, flushes, and returns the records since start(), ordered by start time.
  std::vector<KernelRecord> stop();

  // CUPTI's ids for a context and a stream, to compare with the records'.
  uint32_t context_id(CUcontext ctx) const;
  uint32_t stream_id(CUcontext ctx, CUstream stream) const;

 private:
  KernelActivity() = default;
};

}  // namespace kagent::runner
