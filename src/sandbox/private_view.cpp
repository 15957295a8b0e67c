#include "kagent/sandbox/private_view.hpp"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "kagent/sandbox/filesystem_view.hpp"
#include "kagent/sandbox/process_setup.hpp"

namespace kagent::sandbox {

std::string enter_private_view(const std::vector<std::string>& visible) {
  // Taken before unshare: inside a fresh user namespace the ids read as the overflow id.
  const IdMaps maps = identity_id_maps();
  // Read while the host's /proc is still visible.
  const int cap_last = capability_last();
  bool own_user = true;
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) {
    int err = errno;
    // Root where user namespaces are off (a sysctl, a seccomp profile) can still have the rest.
    if (geteuid() != 0 || unshare(CLONE_NEWNS | CLONE_NEWNET) != 0)
      return fmt::format("unshare: {}", std::strerror(err));
    own_user = false;
  }
  if (own_user) {
    if (!write_id_maps(maps.uid_map.c_str(), maps.gid_map.c_str()))
      return fmt::format("id maps: {}", std::strerror(errno));
  }
  FilesystemView view;
  for (const auto& v : visible) view.add_read_only(v);
  view.finish("/tmp");
  const char* where = nullptr;
  if (const char* step = view.enter(&where))
    return fmt::format("{} {}: {}", step, where != nullptr ? where : "", std::strerror(errno));
  if (!drop_all_capabilities(cap_last)) return fmt::format("dropping capabilities: {}", std::strerror(errno));
  return "";
}

}  // namespace kagent::sandbox
