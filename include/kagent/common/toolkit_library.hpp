#pragma once
// Optional CUDA libraries (libcupti, libcublas, libcublasLt, libcudnn) are loaded with dlopen, so
// kagent builds, links and runs where they are missing: each user says what it lost instead.
#include <string>
#include <vector>

namespace kagent {

// Looks for `soname` in the toolkit first ($CUDA_HOME, then /usr/local/cuda: lib64, the
// targets/*/lib folders, then `extra_dirs` under the same roots), then wherever the loader finds
// it. The handle, never closed; nullptr with *why (the loader's last error) when it is nowhere.
void* open_toolkit_library(const std::string& soname, const std::vector<std::string>& extra_dirs, std::string* why);

// A library the toolkit may lack but a PyTorch install brings (cuDNN, cuBLASLt as NVIDIA's Python
// wheels). Each of `sonames` (most specific first: "libcudnn.so.9", "libcudnn.so") is looked for in
// the folders of $KAGENT_LIBRARY_PATH (colon-separated), then the toolkit (as above), then the
// nvidia/*/lib folders of the Python installs found under $VIRTUAL_ENV, $CONDA_PREFIX,
// ~/.local, /usr/local and /usr, then by the loader. The handle (never closed) and, in *path,
// where it was found; nullptr with *why listing what was tried when it is nowhere.
void* open_cuda_library(const std::vector<std::string>& sonames, std::string* why, std::string* path = nullptr);

// The folders open_cuda_library searches, in order (for `kagent doctor` and messages).
std::vector<std::string> cuda_library_dirs();

}  // namespace kagent
