#include "kagent/profile/cupti_library.hpp"

#include "kagent/common/toolkit_library.hpp"

namespace kagent::profile {

void* open_cupti(std::string* why) {
  static std::string failure;
  static void* lib = open_toolkit_library("libcupti.so", {"extras/CUPTI/lib64"}, &failure);
  if (!lib && why) *why = failure;
  return lib;
}

const char* counters_unavailable_in_this_build() {
#if defined(__SANITIZE_ADDRESS__)
  return "this kagent is built with AddressSanitizer, which cannot load CUPTI's libnvperf_host.so "
         "(RTLD_DEEPBIND)";
#else
  return nullptr;
#endif
}

}  // namespace kagent::profile
