#include "kagent/eval/plan_libraries.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/gpu/libraries.hpp"

namespace kagent {

void require_plan_libraries(const Candidate& cand) {
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) {
    const Launch& l = cand.plan.launches[i];
    std::string why;
    if (l.kind == StepKind::gemm && !load_cublaslt(&why))
      throw EnvError(fmt::format("{}: launch[{}] is a gemm step: {}", cand.path.string(), i, why));
    if (l.kind == StepKind::conv && !load_cudnn(&why))
      throw EnvError(fmt::format("{}: launch[{}] is a conv step: {}", cand.path.string(), i, why));
  }
}

}  // namespace kagent
