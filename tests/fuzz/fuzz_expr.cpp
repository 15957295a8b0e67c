// Plan expressions: parse, evaluate (integers and decimals), list the names they read.
#include <vector>

#include "fuzz_util.hpp"
#include "kagent/spec/expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<int64_t> shape = {3, 5, 1 << 20, INT64_C(1) << 40};
  const kagent::ShapeLookup shapes = [](std::string_view name) -> const std::vector<int64_t>* {
    return name == "x" || name == "out" ? &shape : nullptr;
  };
  const kagent::ScalarLookup scalars = [](std::string_view name) -> std::optional<kagent::ExprValue> {
    if (name == "n") return kagent::ExprValue{true, INT64_MAX, 0.0};
    if (name == "f") return kagent::ExprValue{false, 0, 1e308};
    return std::nullopt;
  };
  try {
    kagent::Expr e = kagent::Expr::parse(kagent::fuzz::text_of(data, size));
    e.tensor_names();
    e.scalar_names();
    e.eval(shapes, scalars);
  } catch (const kagent::ExprError&) {
  }
  return 0;
}
