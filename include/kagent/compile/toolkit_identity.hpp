#pragma once
// What a candidate can #include: the toolkit's headers and nothing else (the compile worker sees
// no other file), so the compile cache key names the headers' identity. A changed or replaced
// toolkit (an upgrade in place, a header edited, another KAGENT_CUDA_HOME) is a different key.
#include <string>

#include "kagent/compile/options.hpp"

namespace kagent {

// A hash of: the include directories' real paths; size and modification time of each directory
// and of every file directly in them and in their first-level subdirectories (cuda_fp16.h,
// crt/, cuda/std/ ...); the toolkit's version.json. Computed once per process per toolkit.
std::string toolkit_identity(const CudaPaths& paths);
// The same, computed afresh (tests; toolkit_identity keeps the first answer per process).
std::string toolkit_identity_now(const CudaPaths& paths);

// The host directories the compile worker must see: the include directories.
std::vector<std::string> toolkit_visible_dirs(const CudaPaths& paths);

}  // namespace kagent
