#pragma once
// The architecture to compile for when none is given: the GPU's, else sm_90a.
#include <string>

namespace kagent {

// GPU `gpu`'s architecture when there is one, else sm_90a. `source` says where it came from, for
// the output. InputError when `gpu` is not one of this machine's GPUs.
std::string default_arch(int gpu, std::string* source);

}  // namespace kagent
