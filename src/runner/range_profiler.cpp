#include "range_profiler.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <stdexcept>

#include <fmt/format.h>

#include "kagent/profile/cupti_library.hpp"

namespace kagent::runner {

namespace {

#define KAGENT_RANGE_FUNCTIONS(X)                                                                          \
  X(cuptiProfilerInitialize)                                                                               \
  X(cuptiDeviceGetChipName)                                                                                \
  X(cuptiProfilerGetCounterAvailability)                                                                   \
  X(cuptiProfilerHostInitialize) X(cuptiProfilerHostDeinitialize) X(cuptiProfilerHostConfigAddMetrics)     \
      X(cuptiProfilerHostGetConfigImageSize) X(cuptiProfilerHostGetConfigImage)                            \
          X(cuptiProfilerHostEvaluateToGpuValues) X(cuptiRangeProfilerEnable) X(cuptiRangeProfilerDisable) \
              X(cuptiRangeProfilerGetCounterDataSize) X(cuptiRangeProfilerCounterDataImageInitialize)      \
                  X(cuptiRangeProfilerSetConfig) X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop)      \
                      X(cuptiRangeProfilerDecodeData) X(cuptiRangeProfilerGetCounterDataInfo)              \
                          X(cuptiRangeProfilerCounterDataGetRangeInfo) X(cuptiGetResultString)

struct RangeApi {
#define KAGENT_RANGE_SLOT(name) decltype(&::name) name = nullptr;
  KAGENT_RANGE_FUNCTIONS(KAGENT_RANGE_SLOT)
#undef KAGENT_RANGE_SLOT
};

// The table, loaded and cuptiProfilerInitialize'd once per process.
const RangeApi& api() {
  static std::string failure;
  static RangeApi a;
  static bool ok = [] {
    if (const char* no = profile::counters_unavailable_in_this_build()) {
      failure = no;
      return false;
    }
    void* lib = profile::open_cupti(&failure);
    if (!lib) return false;
#define KAGENT_RANGE_LOAD(name)                                              \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, #name));            \
  if (!a.name) {                                                             \
    failure = "libcupti.so has no " #name " (CUDA 12.6 or later is needed)"; \
    return false;                                                            \
  }
    KAGENT_RANGE_FUNCTIONS(KAGENT_RANGE_LOAD)
#undef KAGENT_RANGE_LOAD
    CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE, nullptr};
    CUptiResult rc = a.cuptiProfilerInitialize(&p);
    if (rc != CUPTI_SUCCESS) {
      const char* s = nullptr;
      a.cuptiGetResultString(rc, &s);
      failure = fmt::format("cuptiProfilerInitialize: {}", s ? s : "error");
      return false;
    }
    return true;
  }();
  if (!ok) throw std::runtime_error(failure);
  return a;
}

void check(CUptiResult rc, const char* what) {
  if (rc == CUPTI_SUCCESS) return;
  const char* s = nullptr;
  api().cuptiGetResultString(rc, &s);
  std::string why = s ? s : fmt::format("error {}", static_cast<int>(rc));
  if (rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    why += " (performance counters are restricted to administrators: NVreg_RestrictProfilingToAdminUsers=0)";
  throw std::runtime_error(fmt::format("{}: {}", what, why));
}

}  // namespace

std::vector<RangeValues> profile_ranges(CUcontext ctx, int device_index, const std::vector<std::string>& metrics,
                                        const std::function<void()>& before, const std::function<void()>& work) {
  const RangeApi& a = api();
  std::vector<const char*> names;
  for (const auto& m : metrics) names.push_back(m.c_str());

  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE, nullptr,
                                       static_cast<size_t>(device_index), nullptr};
  check(a.cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");

  CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE, nullptr,
                                                     ctx, 0, nullptr};
  check(a.cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability (size)");
  std::vector<uint8_t> avail_image(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = avail_image.data();
  check(a.cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");

  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                             nullptr,
                                             CUPTI_PROFILER_TYPE_RANGE_PROFILER,
                                             chip.pChipName,
                                             avail_image.data(),
                                             nullptr};
  check(a.cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
  struct HostGuard {
    const RangeApi& a;
    CUpti_Profiler_Host_Object* obj;
    ~HostGuard() {
      CUpti_Profiler_Host_Deinitialize_Params d{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, nullptr, obj};
      a.cuptiProfilerHostDeinitialize(&d);
    }
  } host_guard{a, host.pHostObject};

  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, nullptr,
                                                  host.pHostObject, names.data(), names.size()};
  check(a.cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
  CUpti_Profiler_Host_GetConfigImageSize_Params csize{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE,
                                                      nullptr, host.pHostObject, 0};
  check(a.cuptiProfilerHostGetConfigImageSize(&csize), "cuptiProfilerHostGetConfigImageSize");
  std::vector<uint8_t> config(csize.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params cimg{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, nullptr,
                                                 host.pHostObject, config.size(), config.data()};
  check(a.cuptiProfilerHostGetConfigImage(&cimg), "cuptiProfilerHostGetConfigImage");

  CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, nullptr, ctx, nullptr};
  check(a.cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable");
  struct EnableGuard {
    const RangeApi& a;
    CUpti_RangeProfiler_Object* obj;
    ~EnableGuard() {
      CUpti_RangeProfiler_Disable_Params d{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, nullptr, obj};
      a.cuptiRangeProfilerDisable(&d);
    }
  } enable_guard{a, en.pRangeProfilerObject};

  constexpr size_t kMaxRanges = 256;
  CUpti_RangeProfiler_GetCounterDataSize_Params dsize{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
                                                      nullptr,
                                                      en.pRangeProfilerObject,
                                                      names.data(),
                                                      names.size(),
                                                      kMaxRanges,
                                                      static_cast<uint32_t>(kMaxRanges),
                                                      0};
  check(a.cuptiRangeProfilerGetCounterDataSize(&dsize), "cuptiRangeProfilerGetCounterDataSize");
  std::vector<uint8_t> data(dsize.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params dinit{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE, nullptr, en.pRangeProfilerObject, data.size(),
      data.data()};
  check(a.cuptiRangeProfilerCounterDataImageInitialize(&dinit), "cuptiRangeProfilerCounterDataImageInitialize");

  CUpti_RangeProfiler_SetConfig_Params cfg{};
  cfg.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  cfg.pRangeProfilerObject = en.pRangeProfilerObject;
  cfg.configSize = config.size();
  cfg.pConfig = config.data();
  cfg.counterDataImageSize = data.size();
  cfg.pCounterDataImage = data.data();
  cfg.range = CUPTI_AutoRange;          // one range per kernel
  cfg.replayMode = CUPTI_KernelReplay;  // CUPTI replays each kernel for every pass the metrics need
  cfg.maxRangesPerPass = kMaxRanges;
  cfg.numNestingLevels = 1;
  cfg.minNestingLevel = 1;
  cfg.passIndex = 0;
  cfg.targetNestingLevel = 1;
  check(a.cuptiRangeProfilerSetConfig(&cfg), "cuptiRangeProfilerSetConfig");

  before();
  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, nullptr,
                                         en.pRangeProfilerObject};
  check(a.cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
  work();
  CUpti_RangeProfiler_Stop_Params stop{
      CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, nullptr, en.pRangeProfilerObject, 0, 0, 0};
  check(a.cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE, nullptr,
                                               en.pRangeProfilerObject, 0};
  check(a.cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");

  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE, nullptr,
                                                     data.data(), data.size(), 0};
  check(a.cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
  std::vector<RangeValues> out;
  for (size_t i = 0; i < info.numTotalRanges; ++i) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri{
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE,
        nullptr,
        data.data(),
        data.size(),
        i,
        "/",
        nullptr};
    check(a.cuptiRangeProfilerCounterDataGetRangeInfo(&ri), "cuptiRangeProfilerCounterDataGetRangeInfo");
    RangeValues rv;
    rv.range = ri.rangeName ? ri.rangeName : "";
    rv.values.resize(names.size());
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
                                                      nullptr,
                                                      host.pHostObject,
                                                      data.data(),
                                                      data.size(),
                                                      i,
                                                      names.data(),
                                                      names.size(),
                                                      rv.values.data()};
    check(a.cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
    out.push_back(std::move(rv));
  }
  return out;
}

}  // namespace kagent::runner
