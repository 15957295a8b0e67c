// A candidate's launch plan: the plan block, its JSON, every expression, and the plan evaluated
// against a fixed operator and the sm_90 limits (what `kagent compile --op` does).
#include "fuzz_util.hpp"
#include "kagent/common/error.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/plan_limits.hpp"

namespace {

kagent::Op fixed_op() {
  kagent::Op op;
  op.name = "fuzz";
  op.ref_kind = kagent::RefKind::cuda;
  kagent::TensorSpec x;
  x.name = "x";
  x.shape = {64, 1024};
  kagent::TensorSpec out = x;
  out.name = "out";
  op.inputs = {x};
  op.outputs = {out};
  op.scalars = {kagent::ScalarArg::from_json("s", 2), kagent::ScalarArg::from_json("f", 0.5)};
  return op;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kagent::Op op = fixed_op();
  try {
    kagent::Candidate c = kagent::parse_candidate(std::string(kagent::fuzz::text_of(data, size)), "fuzz.cu");
    kagent::check_plan_limits(c, op, kagent::launch_limits(90));
  } catch (const kagent::InputError&) {
  }
  return 0;
}
