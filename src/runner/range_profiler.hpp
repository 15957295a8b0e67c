#pragma once
// Hardware counters per kernel through CUPTI's range profiler (the profiler host and target APIs
// of CUDA 13), loaded with dlopen like the activity API: each kernel the given work launches is
// one range (auto ranges), replayed by CUPTI as many times as the metrics need passes (kernel
// replay, memory saved and restored between passes), and the metrics evaluated per range. Where
// counters cannot be read (no permission, another profiler attached, an unsupported chip) the
// reason comes back instead of values.
#include <cuda.h>

#include <functional>
#include <string>
#include <vector>

namespace kagent::runner {

struct RangeValues {
  std::string range;           // CUPTI's name for the range (auto ranges are numbered: "0", "1", ...)
  std::vector<double> values;  // one per metric, in the order asked
};

// Profiles what `work` launches on `ctx` (device `device_index`): one range per kernel, in launch
// order. `before` runs just before profiling starts (set-up work such as an L2 flush, which must
// not become a range of its own). Throws std::runtime_error with the reason when counters cannot
// be read.
std::vector<RangeValues> profile_ranges(CUcontext ctx, int device_index, const std::vector<std::string>& metrics,
                                        const std::function<void()>& before, const std::function<void()>& work);

}  // namespace kagent::runner
