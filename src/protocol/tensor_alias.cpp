#include "kagent/protocol/tensor_alias.hpp"

#include <fmt/format.h>

namespace kagent {

namespace {

const IpcTensorRef* find(const std::vector<IpcTensorRef>& refs, const std::string& name) {
  for (const auto& r : refs)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

bool tensors_overlap(const IpcTensorRef& a, const IpcTensorRef& b) {
  if (a.bytes == 0 || b.bytes == 0 || a.handle.empty() || a.handle != b.handle) return false;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

std::optional<std::string> aliased_output(const std::vector<IpcTensorRef>& solution,
                                          const std::vector<IpcTensorRef>& reference,
                                          const std::vector<std::string>& outputs,
                                          const std::vector<std::string>& inputs) {
  for (const auto& out : outputs) {
    const IpcTensorRef* o = find(solution, out);
    if (o == nullptr) continue;
    for (const auto& in : inputs) {
      const IpcTensorRef* i = find(solution, in);
      if (i == nullptr || !tensors_overlap(*o, *i)) continue;
      const IpcTensorRef* ro = find(reference, out);
      const IpcTensorRef* ri = find(reference, in);
      if (ro != nullptr && ri != nullptr && tensors_overlap(*ro, *ri)) continue;  // the reference does the same
      return fmt::format(
          "the solution's output '{}' is stored in its input '{}' (the same memory): it wrote its result into "
          "the tensor it was given and returned that tensor. The reference returns a new tensor and leaves its "
          "inputs unchanged; allocate the output (torch.empty_like) instead",
          out, in);
    }
  }
  return std::nullopt;
}

}  // namespace kagent
