#include "kagent/eval/harness_source.hpp"

namespace kagent {

extern const char* const kHarnessKernelsSource;  // generated from src/runner/harness_kernels.cu

Candidate harness_kernels() {
  Candidate c;
  c.path = "kagent_harness_kernels.cu";
  c.source = kHarnessKernelsSource;
  return c;
}

}  // namespace kagent
