#include "kagent/gpu/memory_users.hpp"

#include <dlfcn.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

namespace kagent {

namespace {

// The few NVML declarations used here (nvml.h is not part of the CUDA toolkit's include directory
// everywhere); their layout is NVML's stable ABI.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2), as nvmlDeviceGetComputeRunningProcesses_v3 fills it
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, NvmlProcessInfo*) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  std::string problem;
};

const Nvml& nvml() {
  static Nvml lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      lib.problem = fmt::format("NVML not found ({})", dlerror());
      return;
    }
    lib.init = reinterpret_cast<decltype(lib.init)>(dlsym(h, "nvmlInit_v2"));
    lib.by_uuid = reinterpret_cast<decltype(lib.by_uuid)>(dlsym(h, "nvmlDeviceGetHandleByUUID"));
    lib.processes = reinterpret_cast<decltype(lib.processes)>(dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3"));
    lib.error_string = reinterpret_cast<decltype(lib.error_string)>(dlsym(h, "nvmlErrorString"));
    if (lib.init == nullptr || lib.by_uuid == nullptr || lib.processes == nullptr || lib.error_string == nullptr) {
      lib.problem = "NVML lacks nvmlDeviceGetComputeRunningProcesses_v3 (a driver older than 510)";
      return;
    }
    if (nvmlReturn_t rc = lib.init(); rc != kNvmlSuccess)
      lib.problem = fmt::format("nvmlInit: {}", lib.error_string(rc));
  });
  return lib;
}

pid_t parent_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return 0;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  char state = 0;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

}  // namespace

std::optional<std::vector<GpuMemoryUser>> gpu_memory_users(const std::string& uuid, std::string* why) {
  const Nvml& lib = nvml();
  auto fail = [&](std::string text) -> std::optional<std::vector<GpuMemoryUser>> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  if (!lib.problem.empty()) return fail(lib.problem);
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t rc = lib.by_uuid(uuid.c_str(), &dev); rc != kNvmlSuccess)
    return fail(fmt::format("NVML does not know GPU {}: {}", uuid, lib.error_string(rc)));
  std::vector<NvmlProcessInfo> infos(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int n = static_cast<unsigned int>(infos.size());
    nvmlReturn_t rc = lib.processes(dev, &n, infos.data());
    if (rc == kNvmlInsufficientSize) {
      infos.resize(static_cast<size_t>(n) + 16);  // processes came meanwhile: room for a few more
      continue;
    }
    if (rc != kNvmlSuccess) return fail(fmt::format("NVML's process list: {}", lib.error_string(rc)));
    std::vector<GpuMemoryUser> out;
    for (unsigned int i = 0; i < n; ++i)
      out.push_back({static_cast<pid_t>(infos[i].pid),
                     infos[i].usedGpuMemory == kNvmlValueNotAvailable ? 0 : infos[i].usedGpuMemory});
    return out;
  }
  return fail("NVML's process list kept growing");
}

bool descends_from(pid_t pid, const std::vector<pid_t>& roots) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    for (pid_t r : roots)
      if (r > 0 && pid == r) return true;
    pid = parent_of(pid);
  }
  return false;
}

MemoryContention memory_contention(const std::string& uuid, const std::vector<pid_t>& ours) {
  MemoryContention c;
  std::string why;
  auto users = gpu_memory_users(uuid, &why);
  if (!users) {
    c.note = why;
    return c;
  }
  for (const auto& u : *users) {
    if (descends_from(u.pid, ours)) continue;
    c.others.push_back(u.pid);
    // A process NVML cannot measure still holds a context (hundreds of MB): count it as such.
    c.others_bytes += u.bytes > 0 ? u.bytes : (uint64_t{256} << 20);
  }
  return c;
}

}  // namespace kagent
