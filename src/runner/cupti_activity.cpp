#include "cupti_activity.hpp"

#include <cupti_activity.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "kagent/profile/cupti_library.hpp"

namespace kagent::runner {

namespace {

// The CUPTI functions the runner uses, resolved from libcupti with dlopen (the X-macro keeps the
// table and the loader in step, as for the driver).
#define KAGENT_CUPTI_FUNCTIONS(X)   \
  X(cuptiActivityEnable)            \
  X(cuptiActivityDisable)           \
  X(cuptiActivityRegisterCallbacks) \
  X(cuptiActivityFlushAll)          \
  X(cuptiActivityGetNextRecord) X(cuptiGetResultString) X(cuptiGetContextId) X(cuptiGetStreamIdEx)

struct CuptiApi {
#define KAGENT_CUPTI_SLOT(name) decltype(&::name) name = nullptr;
  KAGENT_CUPTI_FUNCTIONS(KAGENT_CUPTI_SLOT)
#undef KAGENT_CUPTI_SLOT
};

CuptiApi g_api;
std::mutex g_mu;                      // guards g_records (CUPTI calls back on its own thread)
std::vector<KernelRecord> g_records;  // filled by buffer_completed

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::vector<KernelRecord> got;
  while (g_api.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    got.push_back({k->name ? k->name : "", k->start, k->end, k->streamId, k->contextId, k->isDeviceLaunched != 0});
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mu);
  g_records.insert(g_records.end(), got.begin(), got.end());
}

std::string result_text(CUptiResult rc) {
  const char* s = nullptr;
  if (g_api.cuptiGetResultString && g_api.cuptiGetResultString(rc, &s) == CUPTI_SUCCESS && s) return s;
  return fmt::format("CUPTI error {}", static_cast<int>(rc));
}

}  // namespace

KernelActivity* KernelActivity::get(std::string* why) {
  static std::string failure;
  static KernelActivity* instance = []() -> KernelActivity* {
    void* lib = profile::open_cupti(&failure);
    if (!lib) return nullptr;
#define KAGENT_CUPTI_LOAD(name)                                           \
  g_api.name = reinterpret_cast<decltype(g_api.name)>(dlsym(lib, #name)); \
  if (!g_api.name) {                                                      \
    failure = "libcupti.so has no " #name;                                \
    return nullptr;                                                       \
  }
    KAGENT_CUPTI_FUNCTIONS(KAGENT_CUPTI_LOAD)
#undef KAGENT_CUPTI_LOAD
    CUptiResult rc = g_api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (rc != CUPTI_SUCCESS) {
      failure = "CUPTI activity callbacks refused: " + result_text(rc);
      return nullptr;
    }
    return new KernelActivity();  // lives as long as the process, like CUPTI's own state
  }();
  if (!instance && why) *why = failure;
  return instance;
}

void KernelActivity::start() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_records.clear();
  }
  CUptiResult rc = g_api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) throw std::runtime_error("CUPTI: enabling kernel activity: " + result_text(rc));
}

std::vector<KernelRecord> KernelActivity::stop() {
  g_api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  g_api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<KernelRecord> out;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    out.swap(g_records);
  }
  std::sort(out.begin(), out.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  return out;
}

uint32_t KernelActivity::context_id(CUcontext ctx) const {
  uint32_t id = 0;
  g_api.cuptiGetContextId(ctx, &id);
  return id;
}

uint32_t KernelActivity::stream_id(CUcontext ctx, CUstream stream) const {
  uint32_t id = 0;
  g_api.cuptiGetStreamIdEx(ctx, stream, 0, &id);
  return id;
}

}  // namespace kagent::runner
