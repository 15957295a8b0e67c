#include "kagent/profile/cupti_library.hpp"

#include "kagent/common/toolkit_library.hpp"

namespace kagent::profile {

void* open_cupti(std::string* why) {
  static std::string failure;
  static void* lib = open_toolkit_library("libcupti.so", {"extras/CUPTI/lib64"}, &failure);
  if (!lib && why) *why = failure;
  return lib;
}

}  // namespace kagent::profile
