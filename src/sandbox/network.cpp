#include "kagent/sandbox/network.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "kagent/sandbox/environment.hpp"
#include "kagent/sandbox/process_setup.hpp"

extern char** environ;

namespace kagent::sandbox {

namespace {

std::string no_namespace_warning(int err) {
  return fmt::format("runner sandbox: no network namespace (unshare: {}); the runner can reach the network",
                     std::strerror(err));
}

}  // namespace

bool cuda_tool_attached() {
  if (const char* v = std::getenv("KAGENT_RUNNER_NETNS"); v != nullptr && std::string_view(v) == "0") return true;
  return cuda_tool_injected();
}

bool cuda_tool_injected() {
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view var = *e;
    std::string_view name = variable_name(var);
    std::string_view value = var.substr(std::min(var.size(), name.size() + 1));
    if (value.empty()) continue;
    if (name == "CUDA_INJECTION64_PATH" || name == "LD_PRELOAD" || name.starts_with("NV_NSIGHT_INJECTION_") ||
        name.starts_with("NV_TPS_"))
      return true;
  }
  return false;
}

NetnsResult enter_network_namespace() {
  NetnsResult result;
  // Taken before unshare: inside a fresh user namespace the ids read as the overflow id.
  const IdMaps maps = identity_id_maps();
  if (unshare(CLONE_NEWNET) == 0) {
    result.entered = true;
    return result;
  }
  int err = errno;
  if (err != EPERM) {
    result.warning = no_namespace_warning(err);
    return result;
  }
  // Unprivileged: a user namespace grants CAP_SYS_ADMIN over a network namespace created with it.
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    result.warning = no_namespace_warning(errno);
    return result;
  }
  // The network namespace exists and is ours now, whatever happens to the id maps below.
  result.entered = true;
  if (!write_id_maps(maps.uid_map.c_str(), maps.gid_map.c_str())) {
    result.warning = fmt::format(
        "runner sandbox: network namespace entered, but the id map failed ({}); files may show as owned by nobody",
        std::strerror(errno));
  }
  return result;
}

}  // namespace kagent::sandbox
