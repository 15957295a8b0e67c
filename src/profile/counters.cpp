#include "kagent/profile/counters.hpp"

#include <cupti_profiler_host.h>
#include <cupti_result.h>
#include <dlfcn.h>

#include <stdexcept>

#include <fmt/format.h>

#include "kagent/profile/cupti_library.hpp"

namespace kagent::profile {

namespace {
enum Index {
  kDuration,
  kDramPct,
  kSmPct,
  kOccupancy,
  kL2Hit,
  kL1Hit,
  kDramBytes,
  kFfma,
  kFadd,
  kFmul,
  kTensorPct,
  kCount
};
}  // namespace

const std::vector<std::string>& counter_metrics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n(kCount);
    n[kDuration] = "gpu__time_duration.sum";
    n[kDramPct] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
    n[kSmPct] = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
    n[kOccupancy] = "sm__warps_active.avg.pct_of_peak_sustained_active";
    n[kL2Hit] = "lts__t_sector_hit_rate.pct";
    n[kL1Hit] = "l1tex__t_sector_hit_rate.pct";
    n[kDramBytes] = "dram__bytes.sum";
    // FP32 work on the CUDA cores, counted per thread as Nsight Compute's roofline counts it.
    n[kFfma] = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
    n[kFadd] = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
    n[kFmul] = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
    // Tensor-core work is not in the FP32 count; its pipe's activity shows that it happened.
    n[kTensorPct] = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
    return n;
  }();
  return names;
}

KernelMetrics kernel_metrics(const std::string& kernel, const std::vector<double>& v) {
  if (v.size() != counter_metrics().size())
    throw std::invalid_argument(
        fmt::format("{} counter values for {} metrics ({})", v.size(), counter_metrics().size(), kernel));
  KernelMetrics m;
  m.kernel = kernel;
  m.duration_ms = v[kDuration] * 1e-6;  // nanoseconds
  m.dram_pct = v[kDramPct];
  m.sm_pct = v[kSmPct];
  m.occupancy_pct = v[kOccupancy];
  m.l2_hit_pct = v[kL2Hit];
  m.l1_hit_pct = v[kL1Hit];
  m.dram_bytes = v[kDramBytes];
  m.fp32_flops = 2 * v[kFfma] + v[kFadd] + v[kFmul];
  m.tensor_pct = v[kTensorPct];
  return m;
}

std::string check_counters_on_chip(const std::string& chip, const std::vector<std::string>& metrics) {
  if (const char* no = counters_unavailable_in_this_build()) throw std::runtime_error(no);
  std::string why;
  void* lib = open_cupti(&why);
  if (!lib) throw std::runtime_error(why);
  auto sym = [&](const char* name) {
    void* f = dlsym(lib, name);
    if (!f) throw std::runtime_error(fmt::format("libcupti.so has no {}", name));
    return f;
  };
  auto init = reinterpret_cast<decltype(&cuptiProfilerHostInitialize)>(sym("cuptiProfilerHostInitialize"));
  auto add = reinterpret_cast<decltype(&cuptiProfilerHostConfigAddMetrics)>(sym("cuptiProfilerHostConfigAddMetrics"));
  auto deinit = reinterpret_cast<decltype(&cuptiProfilerHostDeinitialize)>(sym("cuptiProfilerHostDeinitialize"));
  auto text = reinterpret_cast<decltype(&cuptiGetResultString)>(sym("cuptiGetResultString"));
  auto result = [&](CUptiResult rc) {
    const char* s = nullptr;
    return text(rc, &s) == CUPTI_SUCCESS && s ? std::string(s) : fmt::format("CUPTI error {}", static_cast<int>(rc));
  };

  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                             nullptr,
                                             CUPTI_PROFILER_TYPE_RANGE_PROFILER,
                                             chip.c_str(),
                                             nullptr,  // no counter availability image: no GPU needed
                                             nullptr};
  if (CUptiResult rc = init(&host); rc != CUPTI_SUCCESS) return fmt::format("{}: {}", chip, result(rc));
  std::string refusal;
  for (const auto& m : metrics) {
    const char* name = m.c_str();
    CUpti_Profiler_Host_ConfigAddMetrics_Params p{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, nullptr,
                                                  host.pHostObject, &name, 1};
    if (CUptiResult rc = add(&p); rc != CUPTI_SUCCESS) {
      refusal = fmt::format("{}: {}: {}", chip, m, result(rc));
      break;
    }
  }
  CUpti_Profiler_Host_Deinitialize_Params d{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, nullptr,
                                            host.pHostObject};
  deinit(&d);
  return refusal;
}

}  // namespace kagent::profile
