#include "kagent/spec/plan_limits.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "kagent/common/error.hpp"
#include "kagent/spec/plan_check.hpp"

namespace kagent {

namespace {

[[noreturn]] void fail(const Candidate& cand, const std::string& key, const std::string& what) {
  throw InputError(fmt::format("{}:{}: plan key {}: {}", cand.path.string(), cand.plan_line, key, what));
}

// What an expression evaluates to with this operator's shapes (and the scratch shapes so far).
class PlanEvaluator {
 public:
  PlanEvaluator(const Candidate& cand, const Op& op, const DeviceConstants& device)
      : cand_(cand), op_(op), device_(device) {
    for (const auto* list : {&op.inputs, &op.outputs})
      for (const auto& t : *list) {
        shapes_[t.name] = t.shape;
        tensors_[t.name] = StepTensor{t.shape, t.dtype, list == &op.inputs};
      }
  }

  // What a library step sees of the plan's tensors (operator tensors and scratch so far).
  const StepTensor* tensor(std::string_view name) const {
    auto it = tensors_.find(std::string(name));
    return it == tensors_.end() ? nullptr : &it->second;
  }

  ExprValue eval(const Expr& e, const std::string& key) const {
    ShapeLookup shapes = [this](std::string_view name) -> const std::vector<int64_t>* {
      auto it = shapes_.find(std::string(name));
      return it == shapes_.end() ? nullptr : &it->second;
    };
    ScalarLookup scalars = [this](std::string_view name) -> std::optional<ExprValue> {
      for (const auto& s : op_.scalars)
        if (s.name == name) return s.value;
      return device_constant(name, device_);
    };
    try {
      return e.eval(shapes, scalars);
    } catch (const ExprError& err) {
      fail(cand_, key, fmt::format("'{}': {}", e.text(), err.what()));
    }
  }

  // An integer in [lo, hi]; what names the quantity ("grid size", "threads").
  int64_t int_in(const Expr& e, const std::string& key, int64_t lo, int64_t hi, const char* what) const {
    ExprValue v = eval(e, key);
    if (!v.is_int) fail(cand_, key, fmt::format("'{}' = {}: {} must be an integer", e.text(), v.f, what));
    if (v.i < lo || v.i > hi)
      fail(cand_, key, fmt::format("'{}' = {}: {} must be from {} to {}", e.text(), v.i, what, lo, hi));
    return v.i;
  }

  void add_scratch(const ScratchBuffer& b) {
    std::vector<int64_t> shape;
    int64_t bytes = static_cast<int64_t>(dtype_size(b.dtype));
    for (size_t d = 0; d < b.shape.size(); ++d) {
      const std::string key = fmt::format("scratch.{}.shape[{}]", b.name, d);
      shape.push_back(int_in(b.shape[d], key, 1, std::numeric_limits<int64_t>::max(), "a dimension"));
      if (__builtin_mul_overflow(bytes, shape.back(), &bytes))
        fail(cand_, fmt::format("scratch.{}.shape", b.name), "the buffer's size overflows 64-bit integers");
    }
    tensors_[b.name] = StepTensor{shape, b.dtype, false};
    shapes_[b.name] = std::move(shape);
  }

 private:
  const Candidate& cand_;
  const Op& op_;
  const DeviceConstants& device_;
  std::map<std::string, std::vector<int64_t>> shapes_;
  std::map<std::string, StepTensor> tensors_;
};

// A library step: its shapes resolved as the runner will (library_step.hpp), errors as plan errors.
void check_library_step(const Candidate& cand, const PlanEvaluator& ev, size_t index, const Launch& l) {
  const std::string key = fmt::format("launch[{}]", index);
  StepTensorLookup tensors = [&ev](std::string_view name) { return ev.tensor(name); };
  StepIntEval eval = [&ev](const Expr& e, const std::string& k) {
    return ev.int_in(e, k, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), "a size");
  };
  try {
    if (l.kind == StepKind::gemm) resolve_gemm(l.gemm, key, tensors, eval);
    if (l.kind == StepKind::conv) resolve_conv(l.conv, key, tensors, eval);
  } catch (const StepError& e) {
    fail(cand, e.key(), e.what());
  }
}

void check_launch(const Candidate& cand, const PlanEvaluator& ev, size_t index, const Launch& l,
                  const LaunchLimits& limits) {
  if (l.kind != StepKind::kernel) return check_library_step(cand, ev, index, l);
  const std::string key = fmt::format("launch[{}]", index);
  for (size_t d = 0; d < l.grid.size(); ++d)
    ev.int_in(l.grid[d], fmt::format("{}.grid[{}]", key, d), 1, limits.grid[d], "a grid dimension");
  int64_t threads = 1;
  for (size_t d = 0; d < l.block.size(); ++d)
    threads *= ev.int_in(l.block[d], fmt::format("{}.block[{}]", key, d), 1, limits.block[d], "a block dimension");
  if (threads > limits.threads_per_block)
    fail(cand, key + ".block",
         fmt::format("a block of {} threads (kernel '{}'): at most {}", threads, l.kernel, limits.threads_per_block));
  ev.int_in(l.smem, key + ".smem", 0, limits.dynamic_smem, "dynamic shared memory in bytes");
  for (size_t a = 0; a < l.args.size(); ++a) {
    const PlanArg& arg = l.args[a];
    if (arg.is_tensor) continue;
    const std::string akey = fmt::format("{}.args[{}]", key, a);
    ExprValue v = ev.eval(arg.value, akey);
    if (auto problem = scalar_value_problem(arg.scalar_type, v))
      fail(cand, akey, fmt::format("'{}' {}", arg.text, *problem));
  }
}

}  // namespace

LaunchLimits launch_limits(int sm) {
  LaunchLimits l;
  // The largest dynamic shared memory a block may opt in to (CUDA C++ Programming Guide, the
  // table of technical specifications per compute capability).
  static const std::map<int, int64_t> kSmem = {
      {50, 49152},  {52, 49152},   {53, 49152},   {60, 49152},   {61, 49152},   {62, 49152},   {70, 98304},
      {72, 98304},  {75, 65536},   {80, 166912},  {86, 101376},  {87, 166912},  {88, 101376},  {89, 101376},
      {90, 232448}, {100, 232448}, {101, 232448}, {103, 232448}, {110, 232448}, {120, 101376}, {121, 101376}};
  auto it = kSmem.find(sm);
  l.dynamic_smem = it != kSmem.end() ? it->second : 232448;
  return l;
}

std::optional<std::string> scalar_value_problem(ScalarType type, const ExprValue& v) {
  auto range = [&](int64_t lo, int64_t hi) -> std::optional<std::string> {
    if (!v.is_int) return fmt::format("= {} is not an integer", v.f);
    if (v.i < lo || v.i > hi) return fmt::format("= {} does not fit {}", v.i, scalar_type_name(type));
    return std::nullopt;
  };
  switch (type) {
    case ScalarType::i32:
      return range(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
    case ScalarType::u32:
      return range(0, std::numeric_limits<uint32_t>::max());
    case ScalarType::i64:
      return range(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    case ScalarType::f32:
      if (std::abs(v.as_double()) > std::numeric_limits<float>::max())
        return fmt::format("= {} does not fit f32", v.as_double());
      return std::nullopt;
    case ScalarType::f64:
      return std::nullopt;
  }
  return std::nullopt;
}

void check_plan_library_steps(const Candidate& cand, const Op& op) {
  bool any = false;
  for (const auto& l : cand.plan.launches) any = any || l.kind != StepKind::kernel;
  if (!any) return;
  PlanEvaluator ev(cand, op, DeviceConstants{});
  for (const auto& b : cand.plan.scratch) ev.add_scratch(b);
  for (size_t i = 0; i < cand.plan.launches.size(); ++i)
    if (cand.plan.launches[i].kind != StepKind::kernel) check_library_step(cand, ev, i, cand.plan.launches[i]);
}

int check_plan_constant_limits(const Candidate& cand, const LaunchLimits& limits) {
  const Op none;
  PlanEvaluator ev(cand, none, limits.device);
  auto constant = [&](const Expr& e) {
    if (!e.tensor_names().empty()) return false;
    for (const std::string& n : e.scalar_names())
      if (!device_constant(n, limits.device)) return false;
    return true;
  };
  int unchecked = 0;
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) {
    const Launch& l = cand.plan.launches[i];
    if (l.kind != StepKind::kernel) continue;
    const std::string key = fmt::format("launch[{}]", i);
    for (size_t d = 0; d < l.grid.size(); ++d) {
      if (constant(l.grid[d]))
        ev.int_in(l.grid[d], fmt::format("{}.grid[{}]", key, d), 1, limits.grid[d], "a grid dimension");
      else
        ++unchecked;
    }
    int64_t threads = 1;
    bool all_block = true;
    for (size_t d = 0; d < l.block.size(); ++d) {
      if (constant(l.block[d])) {
        threads *= ev.int_in(l.block[d], fmt::format("{}.block[{}]", key, d), 1, limits.block[d], "a block dimension");
      } else {
        all_block = false;
        ++unchecked;
      }
    }
    if (all_block && threads > limits.threads_per_block)
      fail(cand, key + ".block",
           fmt::format("a block of {} threads (kernel '{}'): at most {}", threads, l.kernel, limits.threads_per_block));
    if (constant(l.smem))
      ev.int_in(l.smem, key + ".smem", 0, limits.dynamic_smem, "dynamic shared memory in bytes");
    else
      ++unchecked;
  }
  return unchecked;
}

void check_plan_limits(const Candidate& cand, const Op& op, const LaunchLimits& limits) {
  check_plan_tensors(cand, op.tensor_names(), op.scalar_names());
  check_plan_precision(cand, op.precision);
  PlanEvaluator ev(cand, op, limits.device);
  // Scratch shapes read only the operator's tensors (check_plan_tensors); launches read both.
  for (const auto& b : cand.plan.scratch) ev.add_scratch(b);
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) check_launch(cand, ev, i, cand.plan.launches[i], limits);
}

}  // namespace kagent
