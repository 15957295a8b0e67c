#include "plan_executor.hpp"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "kagent/spec/library_step.hpp"
#include "kagent/spec/plan_limits.hpp"
#include "library/conv_step.hpp"
#include "library/gemm_step.hpp"

namespace kagent::runner {

namespace {

// The parameter sizes of a kernel as the driver sees them.
std::vector<size_t> param_sizes(CUfunction fn) {
  std::vector<size_t> sizes;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (cu().cuFuncGetParamInfo(fn, i, &offset, &size) != CUDA_SUCCESS) break;
    sizes.push_back(size);
  }
  return sizes;
}

std::array<unsigned char, 8> scalar_bytes(const PlanArg& a, const ExprValue& v, const std::string& where) {
  std::array<unsigned char, 8> out{};
  // The same rule as `kagent compile --op` applies offline (plan_limits.hpp).
  if (auto problem = scalar_value_problem(a.scalar_type, v))
    throw PlanError(fmt::format("{}: '{}' {}", where, a.text, *problem));
  switch (a.scalar_type) {
    case ScalarType::i32: {
      int32_t x = static_cast<int32_t>(v.i);
      std::memcpy(out.data(), &x, 4);
      break;
    }
    case ScalarType::u32: {
      uint32_t x = static_cast<uint32_t>(v.i);
      std::memcpy(out.data(), &x, 4);
      break;
    }
    case ScalarType::i64: {
      std::memcpy(out.data(), &v.i, 8);
      break;
    }
    case ScalarType::f32: {
      float x = static_cast<float>(v.as_double());
      std::memcpy(out.data(), &x, 4);
      break;
    }
    case ScalarType::f64: {
      double x = v.as_double();
      std::memcpy(out.data(), &x, 8);
      break;
    }
  }
  return out;
}

}  // namespace

PlanExecutor::PlanExecutor(const Device& dev, const Module& mod, const Candidate& cand, const TensorMap& tensors,
                           const std::vector<ScalarArg>& scalars, std::string who)
    : dev_(dev), who_(std::move(who)), scalars_(scalars) {
  device_constants_.num_sms = dev_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  ScalarLookup scalar_values = [this](std::string_view name) { return scalar(name); };
  // Scratch first: launches may pass scratch buffers and use their shapes.
  TensorMap all = tensors;
  ShapeLookup op_shapes = [&](std::string_view name) -> const std::vector<int64_t>* {
    auto it = tensors.find(std::string(name));
    return it == tensors.end() ? nullptr : &it->second.shape;
  };
  for (const auto& s : cand.plan.scratch) {
    DeviceTensor t;
    t.dtype = s.dtype;
    int64_t numel = 1;
    for (size_t d = 0; d < s.shape.size(); ++d) {
      int64_t n = 0;
      try {
        n = s.shape[d].eval_int(op_shapes, scalar_values);
      } catch (const ExprError& e) {
        throw PlanError(fmt::format("{}: scratch {} shape[{}] '{}': {}", who_, s.name, d, s.shape[d].text(), e.what()));
      }
      if (n <= 0)
        throw PlanError(fmt::format("{}: scratch {} shape[{}] '{}' = {} (must be positive)", who_, s.name, d,
                                    s.shape[d].text(), n));
      t.shape.push_back(n);
      numel *= n;
    }
    t.bytes = static_cast<size_t>(numel) * dtype_size(s.dtype);
    scratch_.emplace_back(t.bytes, "scratch", s.name);
    t.ptr = scratch_.back().get();
    all[s.name] = t;
  }
  graph_ = cand.plan.graph;
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) {
    const Launch& l = cand.plan.launches[i];
    if (l.kind != StepKind::kernel) {
      launches_.emplace_back();
      prepare_library_step(i, l, all);
      continue;
    }
    Prepared p;
    p.kernel = l.kernel;
    p.fn = mod.function(l.kernel);
    if (p.fn == nullptr)
      throw PlanError(
          fmt::format("{}: launch[{}] names kernel '{}', which the module does not define", who_, i, l.kernel));
    launches_.push_back(std::move(p));
    prepare_launch(i, l, all);
  }
  size_t workspace = 0;
  for (const auto& p : launches_)
    if (p.library) workspace = std::max(workspace, p.library->workspace_bytes());
  if (workspace > 0) workspace_ = std::make_unique<DeviceBuffer>(workspace);
}

PlanExecutor::~PlanExecutor() {
  // Never throws: a failed destroy after a sticky error leaves the context to be torn down anyway.
  if (graph_exec_) cu().cuGraphExecDestroy(graph_exec_);
  if (graph_template_) cu().cuGraphDestroy(graph_template_);
}

// The step's shapes resolved by the same rules as `kagent compile --op` (library_step.hpp), with
// this call's tensors; then the library's descriptors and algorithm, outside any timed region.
void PlanExecutor::prepare_library_step(size_t index, const Launch& l, const TensorMap& tensors) {
  Prepared& p = launches_[index];
  const std::string key = fmt::format("launch[{}]", index);
  const std::string where = fmt::format("{}: {} ({} step)", who_, key, step_kind_name(l.kind));
  std::map<std::string, StepTensor> infos;
  for (const auto& [name, t] : tensors) infos[name] = StepTensor{t.shape, t.dtype, t.is_input};
  StepTensorLookup lookup = [&](std::string_view name) -> const StepTensor* {
    auto it = infos.find(std::string(name));
    return it == infos.end() ? nullptr : &it->second;
  };
  ShapeLookup shapes = [&](std::string_view name) -> const std::vector<int64_t>* {
    auto it = tensors.find(std::string(name));
    return it == tensors.end() ? nullptr : &it->second.shape;
  };
  ScalarLookup scalar_values = [this](std::string_view name) { return scalar(name); };
  StepIntEval eval = [&](const Expr& e, const std::string& k) -> int64_t {
    try {
      return e.eval_int(shapes, scalar_values);
    } catch (const ExprError& err) {
      throw StepError(k, fmt::format("'{}': {}", e.text(), err.what()));
    }
  };
  auto ptr = [&](const std::string& name) -> CUdeviceptr { return name.empty() ? 0 : tensors.at(name).ptr; };
  try {
    if (l.kind == StepKind::gemm) {
      const GemmShape s = resolve_gemm(l.gemm, key, lookup, eval);
      // An operand's offset (checked against its tensor by resolve_gemm) moves its pointer; cuBLASLt
      // is told the alignment the moved pointer has (gemm_step.cpp).
      auto at = [&](const std::string& name, int64_t offset) -> CUdeviceptr {
        if (name.empty()) return 0;
        const DeviceTensor& t = tensors.at(name);
        return t.ptr + static_cast<CUdeviceptr>(offset) * dtype_size(t.dtype);
      };
      p.library = make_gemm_runner(l.gemm, s,
                                   {at(l.gemm.a, s.offset_a), at(l.gemm.b, s.offset_b), at(l.gemm.c, s.offset_c),
                                    at(l.gemm.d, s.offset_d), ptr(l.gemm.bias)},
                                   where);
    } else {
      const ConvShape s = resolve_conv(l.conv, key, lookup, eval);
      p.library = make_conv_runner(l.conv, s, {ptr(l.conv.x), ptr(l.conv.w), ptr(l.conv.y), ptr(l.conv.bias)}, where);
    }
  } catch (const StepError& e) {
    throw PlanError(fmt::format("{}: plan key {}: {}", who_, e.key(), e.what()));
  }
  p.kernel = p.library->description();
  ++library_steps_;
}

void PlanExecutor::enqueue(size_t i, const std::string& what) {
  Prepared& p = launches_[i];
  if (p.library) {
    p.library->enqueue(dev_.stream(), workspace_ ? workspace_->get() : 0, workspace_ ? workspace_->bytes() : 0, what);
    return;
  }
  check(cu().cuLaunchKernel(p.fn, p.grid[0], p.grid[1], p.grid[2], p.block[0], p.block[1], p.block[2], p.smem,
                            dev_.stream(), p.ptrs.data(), nullptr),
        what);
}

// Every step enqueued once under stream capture; the graph is instantiated once and replayed.
void PlanExecutor::capture_graph(const std::string& context) {
  const std::string what = fmt::format("{}: {}: capturing the plan into a CUDA graph", context, who_);
  check(cu().cuStreamBeginCapture(dev_.stream(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), what);
  try {
    for (size_t i = 0; i < launches_.size(); ++i)
      enqueue(i, fmt::format("{} launch[{}] ({})", what, i, launches_[i].kernel));
  } catch (...) {
    CUgraph discard = nullptr;
    cu().cuStreamEndCapture(dev_.stream(), &discard);
    if (discard) cu().cuGraphDestroy(discard);
    throw;
  }
  check(cu().cuStreamEndCapture(dev_.stream(), &graph_template_), what);
  check(cu().cuGraphInstantiate(&graph_exec_, graph_template_, 0), what + " (instantiate)");
}

void PlanExecutor::prepare_launch(size_t index, const Launch& l, const TensorMap& tensors) {
  Prepared& p = launches_[index];
  const std::string where = fmt::format("{}: launch[{}] ({})", who_, index, l.kernel);
  ShapeLookup shapes = [&](std::string_view name) -> const std::vector<int64_t>* {
    auto it = tensors.find(std::string(name));
    return it == tensors.end() ? nullptr : &it->second.shape;
  };
  ScalarLookup scalar_values = [this](std::string_view name) { return scalar(name); };
  auto eval = [&](const Expr& e, const std::string& key) {
    try {
      return e.eval(shapes, scalar_values);
    } catch (const ExprError& err) {
      throw PlanError(fmt::format("{} {} '{}': {}", where, key, e.text(), err.what()));
    }
  };

  // Arguments against the kernel's parameters, by count and by size.
  auto sizes = param_sizes(p.fn);
  if (sizes.size() != l.args.size())
    throw PlanError(fmt::format("{}: the plan passes {} argument(s), the kernel takes {} parameter(s)", where,
                                l.args.size(), sizes.size()));
  p.values.resize(l.args.size());
  for (size_t a = 0; a < l.args.size(); ++a) {
    const PlanArg& arg = l.args[a];
    const std::string awhere = fmt::format("{} argument {} '{}'", where, a, arg.text);
    if (arg.size_bytes() != sizes[a])
      throw PlanError(fmt::format("{}: {} bytes, but parameter {} is {} bytes", awhere, arg.size_bytes(), a, sizes[a]));
    if (arg.is_tensor) {
      auto it = tensors.find(arg.tensor);
      if (it == tensors.end()) throw PlanError(fmt::format("{}: no tensor named '{}'", awhere, arg.tensor));
      std::memcpy(p.values[a].data(), &it->second.ptr, sizeof(CUdeviceptr));
    } else {
      p.values[a] = scalar_bytes(arg, eval(arg.value, fmt::format("args[{}]", a)), awhere);
    }
  }
  for (auto& v : p.values) p.ptrs.push_back(v.data());

  // Launch dimensions within the hardware's and the kernel's limits.
  auto dims = [&](const std::vector<Expr>& exprs, const char* key, std::array<unsigned, 3>& out,
                  const std::array<int64_t, 3>& limit) {
    for (size_t d = 0; d < exprs.size(); ++d) {
      ExprValue v = eval(exprs[d], fmt::format("{}[{}]", key, d));
      if (!v.is_int || v.i < 1 || v.i > limit[d])
        throw PlanError(fmt::format("{} {}[{}] '{}' = {}: must be an integer in 1..{}", where, key, d, exprs[d].text(),
                                    v.is_int ? std::to_string(v.i) : std::to_string(v.f), limit[d]));
      out[d] = static_cast<unsigned>(v.i);
    }
  };
  const LaunchLimits limits;  // the hardware's, for every architecture; shared memory is the device's below
  dims(l.grid, "grid", p.grid, limits.grid);
  dims(l.block, "block", p.block, limits.block);
  const int64_t threads = int64_t(p.block[0]) * p.block[1] * p.block[2];
  int max_threads = 0, static_smem = 0;
  check(cu().cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, p.fn), where);
  check(cu().cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, p.fn), where);
  if (threads > max_threads)
    throw PlanError(
        fmt::format("{}: block of {} threads, but this kernel allows at most {} (registers or "
                    "__launch_bounds__)",
                    where, threads, max_threads));

  ExprValue smem = eval(l.smem, "smem");
  if (!smem.is_int || smem.i < 0)
    throw PlanError(fmt::format("{} smem '{}': must be a non-negative integer", where, l.smem.text()));
  if (smem.i + static_smem > dev_.max_smem_optin())
    throw PlanError(fmt::format("{}: {} bytes of dynamic + {} of static shared memory exceed the device's {} per block",
                                where, smem.i, static_smem, dev_.max_smem_optin()));
  p.smem = static_cast<unsigned>(smem.i);
  // Over 48 KiB of dynamic shared memory needs the kernel's opt-in attribute.
  if (p.smem > 48 * 1024)
    check(cu().cuFuncSetAttribute(p.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(p.smem)),
          where + ": setting the dynamic shared memory limit");
  prepare_cluster(p, where);
}

// Compile-time cluster dimensions (__cluster_dims__): a plain cuLaunchKernel forms the clusters
// the kernel declares. What the driver would reject with a bare CUDA_ERROR_INVALID_VALUE or
// CUDA_ERROR_CLUSTER_OUT_OF_RESOURCES at launch is checked here and said in the plan's terms: a
// grid that is not a whole number of clusters, and a cluster that cannot be co-scheduled with its
// shared memory (one GPC must hold all its blocks at once). Clusters over the portable size of 8
// get the kernel's opt-in (Hopper allows 16).
void PlanExecutor::prepare_cluster(Prepared& p, const std::string& where) {
  std::array<int, 3> cluster{0, 0, 0};
  const CUfunction_attribute attrs[3] = {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                                         CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                         CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH};
  for (int d = 0; d < 3; ++d)
    if (cu().cuFuncGetAttribute(&cluster[d], attrs[d], p.fn) != CUDA_SUCCESS) return;  // no clusters here
  if (cluster[0] <= 0 || cluster[1] <= 0 || cluster[2] <= 0) return;                   // none declared
  const std::string dims = fmt::format("{}x{}x{}", cluster[0], cluster[1], cluster[2]);
  for (int d = 0; d < 3; ++d)
    if (p.grid[d] % static_cast<unsigned>(cluster[d]) != 0)
      throw PlanError(
          fmt::format("{}: grid {}x{}x{} is not a whole number of the kernel's {} clusters "
                      "(__cluster_dims__): grid[{}] = {} is not a multiple of {}",
                      where, p.grid[0], p.grid[1], p.grid[2], dims, d, p.grid[d], cluster[d]));
  if (cluster[0] * cluster[1] * cluster[2] > 8)
    check(cu().cuFuncSetAttribute(p.fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
          fmt::format("{}: allowing the non-portable cluster size {}", where, dims));
  CUlaunchConfig config{};
  config.gridDimX = p.grid[0];
  config.gridDimY = p.grid[1];
  config.gridDimZ = p.grid[2];
  config.blockDimX = p.block[0];
  config.blockDimY = p.block[1];
  config.blockDimZ = p.block[2];
  config.sharedMemBytes = p.smem;
  config.hStream = dev_.stream();
  int clusters = 0;
  check(cu().cuOccupancyMaxActiveClusters(&clusters, p.fn, &config),
        fmt::format("{}: asking how many {} clusters fit", where, dims));
  if (clusters < 1)
    throw PlanError(
        fmt::format("{}: a cluster of {} blocks of {} threads with {} bytes of dynamic shared memory "
                    "each cannot be scheduled on this GPU (all blocks of a cluster must be resident at "
                    "once in one GPC): use smaller clusters or less shared memory",
                    where, dims, p.block[0] * p.block[1] * p.block[2], p.smem));
}

std::optional<ExprValue> PlanExecutor::scalar(std::string_view name) const {
  for (const auto& s : scalars_)
    if (s.name == name) return s.value;
  return device_constant(name, device_constants_);
}

void PlanExecutor::run(bool sync_each, const std::string& context) {
  if (graph_) {
    // The replay is what is judged and timed; a fault inside it is the graph's, not one launch's.
    const std::string what = fmt::format("{}: {} (CUDA graph of {} launches)", context, who_, launches_.size());
    if (sync_each) phase(what);
    if (!graph_exec_) capture_graph(context);
    check(cu().cuGraphLaunch(graph_exec_, dev_.stream()), what);
    if (sync_each) check(cu().cuStreamSynchronize(dev_.stream()), what);
    return;
  }
  for (size_t i = 0; i < launches_.size(); ++i) {
    const std::string what = fmt::format("{}: {} launch[{}] ({}{})", context, who_, i,
                                         launches_[i].library ? "" : "kernel ", launches_[i].kernel);
    if (sync_each) phase(what);
    enqueue(i, what);
    if (sync_each) check(cu().cuStreamSynchronize(dev_.stream()), what);
  }
}

void PlanExecutor::launch(size_t i, const std::string& context) {
  enqueue(i, fmt::format("{}: {} launch[{}] ({}{})", context, who_, i, launches_[i].library ? "" : "kernel ",
                         launches_[i].kernel));
}

void PlanExecutor::poison_scratch() {
  for (const auto& b : scratch_) check(cu().cuMemsetD8Async(b.get(), 0xFF, b.bytes(), dev_.stream()), "poison scratch");
}

std::vector<const GuardedBuffer*> PlanExecutor::scratch() const {
  std::vector<const GuardedBuffer*> out;
  for (const auto& b : scratch_) out.push_back(&b);
  return out;
}

size_t PlanExecutor::scratch_bytes() const {
  size_t n = 0;
  for (const auto& b : scratch_) n += b.bytes();
  return n;
}

}  // namespace kagent::runner
