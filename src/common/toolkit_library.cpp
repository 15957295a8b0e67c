#include "kagent/common/toolkit_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace kagent {

void* open_toolkit_library(const std::string& soname, const std::vector<std::string>& extra_dirs, std::string* why) {
  std::vector<std::string> dirs = {"lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"};
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  std::vector<std::string> tries;
  const char* home = std::getenv("CUDA_HOME");
  for (std::string base : {std::string(home ? home : ""), std::string("/usr/local/cuda")}) {
    if (base.empty()) continue;
    for (const auto& d : dirs) tries.push_back(base + "/" + d + "/" + soname);
  }
  tries.push_back(soname);
  std::string failure;
  for (const auto& t : tries) {
    if (void* l = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL)) return l;
    const char* e = dlerror();
    failure = e ? e : "unknown error";
  }
  if (why) *why = soname + " could not be loaded (" + failure + ")";
  return nullptr;
}

}  // namespace kagent
