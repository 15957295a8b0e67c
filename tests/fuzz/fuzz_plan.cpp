// A candidate's launch plan: the plan block, its JSON, every expression, and the plan evaluated
// against a fixed operator and the sm_90 limits (what `kagent compile --op` does). One input in 16
// is also repeated into the items of a plan just under the size bound (kMaxPlanBytes), so that
// the value bound meets every kind of item; with -rss_limit_mb a parse that builds a DOM of many
// times its text is a finding.
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

// The input's bytes as the items of one launch list, repeated to just under the size bound.
std::string grown_plan(std::string_view item) {
  std::string s = "/*kagent\n{\"launch\": [";
  const size_t room = kagent::kMaxPlanBytes - 16;
  while (s.size() + item.size() + 1 < room) {
    s += item;
    s += ',';
  }
  return s + "0]}\n*/\n";
}

void parse_and_check(std::string text, const kagent::Op& op) {
  try {
    kagent::Candidate c = kagent::parse_plan_candidate(std::move(text), "fuzz.cu");
    kagent::check_plan_limits(c, op, kagent::launch_limits(90));
  } catch (const kagent::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kagent::Op op = fixed_op();
  const std::string_view text = kagent::fuzz::text_of(data, size);
  parse_and_check(std::string(text), op);
  if (size > 1 && data[0] % 16 == 0) parse_and_check(grown_plan(text.substr(1)), op);
  return 0;
}
