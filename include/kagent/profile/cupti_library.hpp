#pragma once
// libcupti, loaded with dlopen: kagent and its runner work without it (the CUPTI cross-check and
// the counters then say why they did not run), so nothing links it.
#include <string>

namespace kagent::profile {

// Opened once per process (beside the toolkit: $CUDA_HOME, /usr/local/cuda; else wherever the
// loader finds it); nullptr with *why when it cannot be.
void* open_cupti(std::string* why);

// Why CUPTI's profiler (the counters) cannot run in this build, or nullptr: libcupti loads
// libnvperf_host.so with RTLD_DEEPBIND, which AddressSanitizer's runtime refuses by aborting the
// process (google/sanitizers#611). The Activity API is not affected.
const char* counters_unavailable_in_this_build();

}  // namespace kagent::profile
