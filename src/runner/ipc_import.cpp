#include "ipc_import.hpp"

#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace kagent::runner {

namespace {

CUipcMemHandle parse_handle(const IpcTensorRef& r) {
  CUipcMemHandle h{};
  if (r.handle.size() != 2 * sizeof(h.reserved))
    throw PlanError(fmt::format("reference tensor '{}': IPC handle of {} hex digits (expected {})", r.name,
                                r.handle.size(), 2 * sizeof(h.reserved)));
  for (size_t i = 0; i < sizeof(h.reserved); ++i) {
    unsigned v = 0;
    if (std::sscanf(r.handle.c_str() + 2 * i, "%2x", &v) != 1)
      throw PlanError(fmt::format("reference tensor '{}': IPC handle is not hex", r.name));
    h.reserved[i] = static_cast<char>(v);
  }
  return h;
}

}  // namespace

IpcImport::IpcImport(const std::vector<IpcTensorRef>& refs) {
  try {
    for (const auto& r : refs) {
      if (r.bytes == 0) {
        tensors_[r.name] = {0, 0};
        continue;
      }
      auto it = by_handle_.find(r.handle);
      if (it == by_handle_.end()) {
        CUipcMemHandle h = parse_handle(r);
        Mapping m;
        check(cu().cuIpcOpenMemHandle(&m.base, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              fmt::format("cuIpcOpenMemHandle (reference tensor '{}')", r.name));
        it = by_handle_.emplace(r.handle, m).first;
        CUdeviceptr base = 0;
        check(cu().cuMemGetAddressRange(&base, &it->second.size, it->second.base),
              fmt::format("cuMemGetAddressRange (reference tensor '{}')", r.name));
      }
      const Mapping& m = it->second;
      if (r.offset > m.size || r.bytes > m.size - r.offset)
        throw PlanError(fmt::format("reference tensor '{}': {} bytes at offset {} overrun its {}-byte allocation",
                                    r.name, r.bytes, r.offset, m.size));
      tensors_[r.name] = {m.base + r.offset, r.bytes};
    }
  } catch (...) {
    for (auto& [h, m] : by_handle_) cu().cuIpcCloseMemHandle(m.base);
    throw;
  }
}

IpcImport::~IpcImport() {
  for (auto& [h, m] : by_handle_) cu().cuIpcCloseMemHandle(m.base);
}

CUdeviceptr IpcImport::ptr(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw PlanError(fmt::format("the reference server sent no tensor named '{}'", name));
  return it->second.first;
}

size_t IpcImport::bytes(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw PlanError(fmt::format("the reference server sent no tensor named '{}'", name));
  return it->second.second;
}

}  // namespace kagent::runner
