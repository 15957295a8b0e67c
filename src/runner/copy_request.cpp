#include "copy_request.hpp"

#include <fmt/format.h>

#include "ipc_import.hpp"

namespace kagent::runner {

void copy_tensors(const Device& dev, const CopyRequest& rq) {
  IpcImport from(rq.from);
  IpcImport to(rq.to);
  for (const auto& t : rq.from) {
    const size_t bytes = from.bytes(t.name);
    if (to.bytes(t.name) != bytes)
      throw PlanError(fmt::format("copy of '{}': {} bytes into {}", t.name, bytes, to.bytes(t.name)));
    if (bytes == 0) continue;
    check(cu().cuMemcpyDtoDAsync(to.ptr(t.name), from.ptr(t.name), bytes, dev.stream()),
          fmt::format("copying '{}' between processes", t.name));
  }
  dev.sync();  // before the mappings close
}

}  // namespace kagent::runner
