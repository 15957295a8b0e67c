#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kagent {

struct GpuInfo {
  int index = 0;
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-...", as nvidia-smi prints it: names this GPU across processes
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
};

struct GpuInventory {
  bool driver_loaded = false;
  int driver_version = 0;  // e.g. 13000
  std::vector<GpuInfo> gpus;
  std::string problem;  // why driver_loaded is false or gpus is empty
};

// Queries the driver without creating a context (cuInit and device attributes only).
GpuInventory query_gpus();

}  // namespace kagent
