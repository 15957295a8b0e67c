#pragma once
// The runner's view of one GPU through the driver API: the primary context, one stream, RAII for
// memory and modules, and errors as exceptions that say whether the context is now unusable.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kagent/gpu/driver.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent::runner {

// A failed driver call. Sticky errors (illegal address, trap, ...) poison the context: the runner
// reports them and exits, and kagent starts a fresh runner.
class CudaError : public std::runtime_error {
 public:
  CudaError(CUresult rc, const std::string& message, bool sticky)
      : std::runtime_error(message), rc_(rc), sticky_(sticky) {}
  CUresult rc() const { return rc_; }
  bool sticky() const { return sticky_; }

 private:
  CUresult rc_;
  bool sticky_;
};

// A plan that cannot run as written (wrong argument count or size, bad launch dimensions).
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const DriverApi& cu();  // the loaded driver; throws CudaError when there is none
void check(CUresult rc, const std::string& what);
bool is_sticky(CUresult rc);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory (cuMemAllocHost): what a copy queued on the stream (cuMemcpyDtoHAsync)
// writes into without the host waiting for it.
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(size_t bytes);
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A CUDA event (timing enabled), destroyed with its owner.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event& operator=(Event&&) = delete;
  CUevent get() const { return e_; }

 private:
  CUevent e_ = nullptr;
};

class Module {
 public:
  explicit Module(const std::string& image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // nullptr when the module has no such kernel.
  CUfunction function(const std::string& name) const;

 private:
  CUmodule mod_ = nullptr;
};

class Device {
 public:
  explicit Device(int ordinal);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  CUstream stream() const { return stream_; }
  CUcontext context() const { return ctx_; }
  const DeviceSummary& summary() const { return summary_; }
  int max_smem_optin() const { return max_smem_optin_; }
  int attribute(CUdevice_attribute a) const;
  void sync() const;

 private:
  CUdevice dev_{};
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceSummary summary_;
  int max_smem_optin_ = 0;
};

// Writes "kagent-phase: <text>" to stderr before a step that may hang or fault, so that kagent
// can name the step when it has to kill the runner.
void phase(const std::string& text);

}  // namespace kagent::runner
