#pragma once
// Optional CUDA toolkit libraries (libcupti, libcublas) are loaded with dlopen, so kagent builds,
// links and runs where they are missing: each user says what it lost instead.
#include <string>
#include <vector>

namespace kagent {

// Looks for `soname` in the toolkit first ($CUDA_HOME, then /usr/local/cuda: lib64, the
// targets/*/lib folders, then `extra_dirs` under the same roots), then wherever the loader finds
// it. The handle, never closed; nullptr with *why (the loader's last error) when it is nowhere.
void* open_toolkit_library(const std::string& soname, const std::vector<std::string>& extra_dirs, std::string* why);

}  // namespace kagent
