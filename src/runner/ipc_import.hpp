#pragma once
// Tensors of the reference server (a PyTorch process) opened in the runner by CUDA IPC. Each
// handle names a whole allocation of torch's caching allocator; a tensor is an offset into it.
// An import is short-lived on purpose: the runner copies what it needs and closes the mappings
// before any candidate code runs, so a candidate can never reach the server's memory.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent::runner {

class IpcImport {
 public:
  // Opens every distinct handle among `refs` (once each: opening the same handle twice in one
  // context fails). Throws CudaError, or PlanError for a reference that does not fit its allocation.
  explicit IpcImport(const std::vector<IpcTensorRef>& refs);
  ~IpcImport();  // closes the mappings
  IpcImport(const IpcImport&) = delete;
  IpcImport& operator=(const IpcImport&) = delete;

  // The device address of a tensor by name; throws PlanError for a name the import lacks.
  CUdeviceptr ptr(const std::string& name) const;
  size_t bytes(const std::string& name) const;

 private:
  struct Mapping {
    CUdeviceptr base = 0;
    size_t size = 0;
  };
  std::map<std::string, Mapping> by_handle_;
  std::map<std::string, std::pair<CUdeviceptr, size_t>> tensors_;
};

}  // namespace kagent::runner
