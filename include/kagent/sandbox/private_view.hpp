#pragma once
// A process sealing itself into a private file system view: used by children that run untrusted
// input through a library that opens files on its own (the compile worker: NVRTC's preprocessor
// opens #include files itself, and a macro can build any path). The child calls it before it
// starts threads; sandbox/ keeps every namespace and capability step in one place.
#include <string>
#include <vector>

namespace kagent::sandbox {

// Own user (where permitted; else root keeps its user namespace), mount and network namespaces,
// then a view holding only `visible` (read-only) and an empty /tmp, then no capabilities.
// Empty on success, else one line saying which step failed and why; the process is then
// unchanged only if the first step failed (the caller decides whether to go on without a view).
std::string enter_private_view(const std::vector<std::string>& visible);

}  // namespace kagent::sandbox
