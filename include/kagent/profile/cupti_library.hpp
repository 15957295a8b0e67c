#pragma once
// libcupti, loaded with dlopen: kagent and its runner work without it (the CUPTI cross-check and
// the counters then say why they did not run), so nothing links it.
#include <string>

namespace kagent::profile {

// Opened once per process (beside the toolkit: $CUDA_HOME, /usr/local/cuda; else wherever the
// loader finds it); nullptr with *why when it cannot be.
void* open_cupti(std::string* why);

}  // namespace kagent::profile
