#pragma once
// The parts of a private file system view that every jailed child shares: the host's system
// directories (read-only), the few /etc files programs need to start, the CUDA toolkit, and a
// private /dev. What a child sees beyond these (its workspace, its problem file, Python's
// packages) its own policy adds.
#include <cstdint>
#include <string>
#include <vector>

#include "kagent/sandbox/filesystem_view.hpp"

namespace kagent::sandbox {

// /usr, /bin, /sbin, /lib*, /opt and /sys (the CUDA driver and nvidia-smi read it); of /etc only
// what programs need to start (the loader's cache, user and group names, the alternatives links):
// no shadow, no keys, no credentials; the CUDA toolkit kagent uses (KAGENT_CUDA_HOME too). Never a
// path in a home directory (environment.hpp's in_home_directory).
std::vector<std::string> system_read_only_paths();

// A /dev of its own (a 1 MiB tmpfs): null, zero, full, random, urandom, tty, the fd links, and a
// /dev/shm tmpfs holding at most `shm_bytes`; with `gpu`, the host's /dev/nvidia* nodes.
void add_private_dev(FilesystemView& view, bool gpu, std::uint64_t shm_bytes);

}  // namespace kagent::sandbox
