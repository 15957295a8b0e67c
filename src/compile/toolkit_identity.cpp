#include "kagent/compile/toolkit_identity.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"

namespace kagent {

namespace fs = std::filesystem;

namespace {

void add_stat(Hasher& h, const fs::path& p) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) {
    h.add_field(p.string()).add_field("missing");
    return;
  }
  h.add_field(p.string())
      .add_field(fmt::format("{} {}.{:09}", static_cast<long long>(st.st_size),
                             static_cast<long long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec)));
}

// The directory and its entries, sorted (directory order is not stable), and one level below.
void add_tree(Hasher& h, const fs::path& dir, int depth) {
  add_stat(h, dir);
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) {
    if (depth > 0 && fs::is_directory(e, ec)) {
      add_tree(h, e, depth - 1);
    } else {
      add_stat(h, e);
    }
  }
}

std::string compute(const CudaPaths& paths) {
  Hasher h;
  h.add_field("kagent-toolkit-v1");
  for (const auto& d : toolkit_visible_dirs(paths)) add_tree(h, d, 1);
  std::error_code ec;
  fs::path version = fs::weakly_canonical(paths.include_dir / ".." / "version.json", ec);
  if (!ec && fs::is_regular_file(version, ec)) {
    try {
      h.add_field(read_text_file(version));
    } catch (const std::exception&) {
      h.add_field("version.json unreadable");
    }
  }
  return h.hex();
}

}  // namespace

std::vector<std::string> toolkit_visible_dirs(const CudaPaths& paths) {
  std::vector<std::string> out;
  out.push_back(paths.include_dir.string());
  // The harness passes -I<include_dir>; the worker's view holds it at that same path (a symlink
  // such as /usr/local/cuda/include is bound at its own name).
  if (!paths.cccl_dir.empty() && !paths.cccl_dir.string().starts_with(paths.include_dir.string() + "/"))
    out.push_back(paths.cccl_dir.string());
  return out;
}

std::string toolkit_identity_now(const CudaPaths& paths) {
  return compute(paths);
}

std::string toolkit_identity(const CudaPaths& paths) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mu);
  std::string key = paths.include_dir.string() + "\n" + paths.cccl_dir.string();
  auto it = known.find(key);
  if (it == known.end()) it = known.emplace(key, compute(paths)).first;
  return it->second;
}

}  // namespace kagent
