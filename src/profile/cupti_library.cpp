#include "kagent/profile/cupti_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace kagent::profile {

void* open_cupti(std::string* why) {
  static std::string failure;
  static void* lib = []() -> void* {
    std::vector<std::string> tries;
    const char* home = std::getenv("CUDA_HOME");
    for (std::string base : {std::string(home ? home : ""), std::string("/usr/local/cuda")}) {
      if (base.empty()) continue;
      for (const char* sub :
           {"/lib64/libcupti.so", "/extras/CUPTI/lib64/libcupti.so", "/targets/x86_64-linux/lib/libcupti.so"})
        tries.push_back(base + sub);
    }
    tries.push_back("libcupti.so");
    for (const auto& t : tries) {
      if (void* l = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL)) return l;
      failure = dlerror();
    }
    failure = "libcupti.so could not be loaded (" + failure + ")";
    return nullptr;
  }();
  if (!lib && why) *why = failure;
  return lib;
}

}  // namespace kagent::profile
