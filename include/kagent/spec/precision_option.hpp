#pragma once
// A precision given on the command line (or in a run's options): fp32, tf32, fp16 or bf16.
#include <string>

#include "kagent/spec/op.hpp"

namespace kagent {

// InputError naming --precision and the choices otherwise.
Precision precision_option(const std::string& text);

}  // namespace kagent
