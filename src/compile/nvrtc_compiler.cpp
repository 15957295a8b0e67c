#include <nvrtc.h>

#include <chrono>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/compile/compile_worker_client.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/cubin.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/compile/ptxas_log.hpp"
#include "kagent/compile/toolkit_identity.hpp"
#include "kagent/spec/option_allowlist.hpp"
#include "kagent/spec/plan_limits.hpp"

namespace kagent {

namespace {

// Bumped whenever what a cache entry holds, or how it is produced, changes.
constexpr std::string_view kCacheFormat = "kagent-compile-v2";

class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    nvrtcResult rc = nvrtcCreateProgram(&prog_, source.c_str(), name.c_str(), 0, nullptr, nullptr);
    if (rc != NVRTC_SUCCESS)
      throw Error(ExitCode::environment, fmt::format("{}: nvrtcCreateProgram: {}", name, nvrtcGetErrorString(rc)));
  }
  ~Program() { nvrtcDestroyProgram(&prog_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcResult compile(const std::vector<std::string>& options) {
    std::vector<const char*> argv;
    for (const auto& o : options) argv.push_back(o.c_str());
    return nvrtcCompileProgram(prog_, static_cast<int>(argv.size()), argv.data());
  }
  std::string log() const {
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog_, &n) != NVRTC_SUCCESS || n == 0) return {};
    std::string s(n, '\0');
    nvrtcGetProgramLog(prog_, s.data());
    // The log is NUL-terminated and, with ptxas output appended, can hold a NUL mid-way too.
    std::erase(s, '\0');
    return s;
  }
  std::string cubin() const {
    size_t n = 0;
    if (nvrtcGetCUBINSize(prog_, &n) != NVRTC_SUCCESS || n == 0) return {};
    std::string s(n, '\0');
    nvrtcGetCUBIN(prog_, s.data());
    return s;
  }

 private:
  nvrtcProgram prog_{};
};

// The per-kernel table: which kernels exist, launch bounds and parameters come from the cubin;
// the declared shared memory and spills from ptxas (the cubin's shared section also counts the
// 1 KiB the system reserves per block on sm_90, which is not the candidate's doing).
std::vector<KernelInfo> kernel_table(const std::string& cubin, const std::string& log) {
  auto ptxas = parse_ptxas_log(log);
  std::vector<KernelInfo> out;
  for (const auto& ck : read_cubin_kernels(cubin)) {
    KernelInfo k;
    k.name = ck.name;
    k.registers = ck.registers;
    k.stack_frame = ck.frame_size;
    if (auto it = ptxas.find(ck.name); it != ptxas.end()) {
      k.registers = it->second.registers > 0 ? it->second.registers : k.registers;
      k.static_smem = it->second.smem;
      k.stack_frame = it->second.stack_frame;
      k.spill_stores = it->second.spill_stores;
      k.spill_loads = it->second.spill_loads;
    }
    k.launch_bounds = ck.max_threads;
    k.max_threads_per_block = max_threads_for(k.registers, k.launch_bounds);
    k.param_sizes = ck.param_sizes;
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

std::vector<KernelSignature> kernel_signatures(const std::vector<KernelInfo>& kernels) {
  std::vector<KernelSignature> out;
  for (const auto& k : kernels) out.push_back({k.name, k.param_sizes});
  return out;
}

CompileResult compile_checked(const Candidate& cand, const Op* op, const Compiler& compiler, const std::string& arch) {
  // The launch limits of the target, with the operator's shapes where they are known, else of the
  // values that read none of them: a plan that could never launch is bad input before any GPU.
  const LaunchLimits limits = launch_limits(arch_number(arch).value_or(0));
  std::string checks;
  if (op != nullptr && op->signature_known()) {
    check_plan_limits(cand, *op, limits);
    checks = fmt::format(
        "plan checked: tensor and scalar names, precision, every grid, block and smem value and scalar argument "
        "with the operator's shapes against {}'s launch limits, library steps, kernel parameters",
        arch);
  } else {
    if (op != nullptr) check_plan_precision(cand, op->precision);
    const int unchecked = check_plan_constant_limits(cand, limits);
    checks = fmt::format(
        "plan checked: the grid, block and smem values that read no tensor against {}'s launch limits, kernel "
        "parameters; not checked without the operator's shapes: tensor and scalar names, library steps{}",
        arch,
        unchecked
            ? fmt::format(", {} launch {} them", unchecked, unchecked == 1 ? "value that reads" : "values that read")
            : "");
  }
  CompileResult r = compiler.compile(cand, arch);
  if (r.ok) check_plan_kernels(cand, kernel_signatures(r.kernels));
  r.plan_checks = std::move(checks);
  return r;
}

Compiler::Compiler(CudaPaths paths, std::shared_ptr<CompileCache> cache, CompileIsolation isolation)
    : paths_(std::move(paths)), cache_(std::move(cache)), isolation_(isolation) {}

std::string Compiler::nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

CompileResult Compiler::compile(const Candidate& cand, const std::string& arch) const {
  const auto t0 = std::chrono::steady_clock::now();
  check_arch(arch);
  CompileResult r;
  r.arch = arch;
  r.options = harness_options(arch, paths_);
  // Checked again here, not only when the plan was parsed: options may reach the compiler by
  // other routes, and an option that names a file must never get to NVRTC.
  for (size_t i = 0; i < cand.plan.options.size(); ++i)
    check_option_allowed(cand.plan.options[i], fmt::format("{}: plan key options[{}]", cand.path.string(), i));
  r.options.insert(r.options.end(), cand.plan.options.begin(), cand.plan.options.end());
  const std::string name = cand.path.string();
  // What the source can include is the toolkit's headers and nothing else (the worker sees no
  // other file): their identity is part of the key.
  const std::string toolkit = toolkit_identity(paths_);

  Hasher h;
  h.add_field(kCacheFormat).add_field(nvrtc_version()).add_field(arch).add_field(name).add_field(cand.source);
  h.add_field(toolkit);
  for (const auto& o : r.options) h.add_field(o);
  r.key = h.hex();

  auto finish = [&] {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };

  if (cache_) {
    // The entry records its inputs; a hash collision or a stale entry is a miss, never a wrong cubin.
    if (auto hit = cache_->get(r.key); hit && hit->meta.value("source", "") == cand.source &&
                                       hit->meta.value("options", std::vector<std::string>{}) == r.options &&
                                       hit->meta.value("nvrtc", "") == nvrtc_version() &&
                                       hit->meta.value("toolkit", "") == toolkit) {
      try {
        r.ok = hit->meta.at("ok").get<bool>();
        r.log = hit->meta.at("log").get<std::string>();
        r.kernels = hit->meta.at("kernels").get<std::vector<KernelInfo>>();
        r.cubin = std::move(hit->cubin);
        r.cache_hit = true;
        return finish();
      } catch (const std::exception& e) {
        spdlog::debug("compile cache: ignoring a malformed entry {}: {}", r.key, e.what());
      }
    }
  }

  nvrtcResult rc = NVRTC_SUCCESS;
  std::string full_log;
  if (isolation_ == CompileIsolation::worker) {
    WorkerResult w = run_compile_worker({name, cand.source, r.options, toolkit_visible_dirs(paths_),
                                         limits_ ? *limits_ : compile_limits_from_environment()});
    if (!w.stopped.empty()) {
      // Not cached: the same source may finish under a higher limit or on a less loaded machine.
      r.stopped = true;
      r.log = w.stopped + "\n";
      std::erase(w.log, '\0');
      if (!w.log.empty()) r.log += strip_ptxas_info(w.log);
      r.isolation = w.isolation;
      return finish();
    }
    rc = static_cast<nvrtcResult>(w.nvrtc_result);
    full_log = std::move(w.log);
    std::erase(full_log, '\0');
    r.cubin = std::move(w.cubin);
    r.isolation = w.isolation;
  } else {
    Program prog(cand.source, name);
    rc = prog.compile(r.options);
    full_log = prog.log();
    if (rc == NVRTC_SUCCESS) r.cubin = prog.cubin();
    r.isolation = "in-process";
  }
  r.log = strip_ptxas_info(full_log);
  r.ok = rc == NVRTC_SUCCESS;
  if (r.ok) {
    try {
      r.kernels = kernel_table(r.cubin, full_log);
    } catch (const std::exception& e) {
      // The cubin itself is fine for the driver; only the table is lost. Say so.
      spdlog::warn("{}: could not read the kernel table from the cubin: {}", name, e.what());
    }
  } else if (r.log.empty()) {
    r.log = fmt::format("{}: NVRTC failed: {}\n", name, nvrtcGetErrorString(rc));
  }

  if (cache_) {
    CacheEntry entry;
    entry.meta = {{"format", kCacheFormat}, {"nvrtc", nvrtc_version()}, {"arch", arch},
                  {"options", r.options},   {"source", cand.source},    {"ok", r.ok},
                  {"log", r.log},           {"kernels", r.kernels},     {"toolkit", toolkit}};
    entry.cubin = r.cubin;
    cache_->put(r.key, entry);
  }
  return finish();
}

}  // namespace kagent
