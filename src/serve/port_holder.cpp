#include "kagent/serve/port_holder.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>

#include <fmt/format.h>

namespace kagent::serve {

namespace {

namespace fs = std::filesystem;

// Socket inodes listening on `port` in one of /proc/net/tcp or tcp6. A line is
// "sl local_address rem_address st ... inode ...", the address "HEXIP:HEXPORT", st 0A = LISTEN.
void listening_inodes(const char* table, int port, std::set<std::string>& inodes) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(f >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) continue;
    const size_t colon = local.rfind(':');
    if (colon == std::string::npos || state != "0A") continue;
    unsigned long local_port = 0;
    try {
      local_port = std::stoul(local.substr(colon + 1), nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    if (static_cast<int>(local_port) == port && inode != "0") inodes.insert(inode);
  }
}

}  // namespace

std::string port_holder(int port) {
  std::set<std::string> inodes;
  listening_inodes("/proc/net/tcp", port, inodes);
  listening_inodes("/proc/net/tcp6", port, inodes);
  if (inodes.empty()) return "";
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = fs::read_symlink(fd.path(), link_ec).string();
      if (link_ec || !target.starts_with("socket:[")) continue;
      if (!inodes.count(target.substr(8, target.size() - 9))) continue;
      std::string comm;
      std::ifstream(proc.path() / "comm") >> comm;
      return comm.empty() ? fmt::format("pid {}", pid) : fmt::format("pid {} ({})", pid, comm);
    }
  }
  return "";
}

}  // namespace kagent::serve
