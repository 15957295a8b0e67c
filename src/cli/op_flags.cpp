// --atol, --rtol, --tolerance: one declaration for every command that scores a candidate.
#include "commands.hpp"

namespace kagent::cli {

void add_op_flags(CLI::App* sub, OpOverrides* o) {
  auto* atol = sub->add_option_function<double>(
      "--atol", [o](double v) { o->atol = v; }, "Absolute tolerance (default: the op's; fp32 1e-4)");
  auto* rtol = sub->add_option_function<double>(
      "--rtol", [o](double v) { o->rtol = v; }, "Relative tolerance (default: the op's; fp32 1e-4)");
  auto* both = sub->add_option_function<double>(
      "--tolerance",
      [o](double v) {
        o->atol = v;
        o->rtol = v;
      },
      "atol and rtol at once (the CUDA Agent paper scored with 1e-2)");
  both->excludes(atol)->excludes(rtol);
}

}  // namespace kagent::cli
