#include "kagent/model_tools/workspace.hpp"

#include <system_error>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/model_tools/tool.hpp"

namespace fs = std::filesystem;

namespace kagent::model_tools {

namespace {

// Linux gives up after 40 links in one lookup (ELOOP); so do we.
constexpr int kMaxSymlinks = 40;

// p with any trailing separator dropped ("/ws/a/" -> "/ws/a"), so comparisons see one spelling.
fs::path without_trailing_slash(fs::path p) {
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
  return p;
}

// True for root itself and anything under it.
bool is_within(const fs::path& root, const fs::path& p) {
  fs::path rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

// Where an absolute path leads once every symlink along it is followed, the way the kernel
// would. Unlike fs::weakly_canonical this also follows dangling symlinks (a link to a file that
// does not exist yet is where a write would land) and so cannot be tricked by one.
fs::path follow_links(const fs::path& abs, int& links, const std::string& given) {
  fs::path cur = "/";
  for (const fs::path& part : abs.relative_path()) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      cur = cur.parent_path();  // cur has no symlinks left, so this is the physical parent
      continue;
    }
    fs::path next = cur / part;
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(next, ec))) {
      cur = std::move(next);
      continue;
    }
    if (++links > kMaxSymlinks) throw ToolError(fmt::format("too many levels of symbolic links: {}", given));
    fs::path target = fs::read_symlink(next, ec);
    if (ec) throw ToolError(fmt::format("cannot read the symbolic link {}: {}", given, ec.message()));
    cur = follow_links(target.is_absolute() ? target : cur / target, links, given);
  }
  return cur;
}

}  // namespace

Workspace::Workspace(fs::path root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw EnvError(fmt::format("cannot create the workspace {}: {}", root.string(), ec.message()));
  // Canonical, so that resolved paths (which have their symlinks followed) compare against it.
  root_ = fs::canonical(root, ec);
  if (ec) throw EnvError(fmt::format("cannot open the workspace {}: {}", root.string(), ec.message()));
}

fs::path Workspace::resolve(const std::string& path) const {
  if (path.empty()) throw ToolError("path is empty: give a path relative to the workspace (\".\" for its root)");
  if (path.find('\0') != std::string::npos) throw ToolError("path contains a NUL byte");
  fs::path given(path);
  if (given.is_absolute())
    throw ToolError(fmt::format("absolute paths are not allowed: give a path relative to the workspace: {}", path));

  // First by the letters: "a/../../x" climbs out whatever is on disk.
  fs::path lexical = without_trailing_slash((root_ / given).lexically_normal());
  if (!is_within(root_, lexical)) throw ToolError(fmt::format("path escapes the workspace: {}", path));

  // Then on disk: a symlink inside the workspace may lead anywhere.
  int links = 0;
  fs::path real = without_trailing_slash(follow_links(lexical, links, path).lexically_normal());
  if (!is_within(root_, real))
    throw ToolError(
        fmt::format("path escapes the workspace through a symbolic link: {} (leads to {})", path, real.string()));
  return real;
}

std::string Workspace::relative(const fs::path& absolute) const {
  fs::path rel = without_trailing_slash(absolute.lexically_normal()).lexically_relative(root_);
  if (rel.empty()) return absolute.string();  // not under the root: the full path says more
  std::string s = rel.generic_string();
  return s.starts_with("..") && (s.size() == 2 || s[2] == '/') ? absolute.string() : s;
}

}  // namespace kagent::model_tools
