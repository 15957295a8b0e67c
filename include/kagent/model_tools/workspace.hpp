#pragma once
// The run's workspace: the one directory the model's file and shell tools may touch. Paths from
// the model are relative to it; absolute paths, ".." that climbs out and symlinks that lead out
// are refused (ToolError), also when the target does not exist yet.
#include <filesystem>
#include <string>

namespace kagent::model_tools {

class Workspace {
 public:
  explicit Workspace(std::filesystem::path root);  // creates it; root is made absolute and canonical
  const std::filesystem::path& root() const { return root_; }

  // The absolute, symlink-resolved path inside the workspace for a path the model gave.
  std::filesystem::path resolve(const std::string& path) const;
  // The path relative to the root, for messages ("kernels/a.cu").
  std::string relative(const std::filesystem::path& absolute) const;

 private:
  std::filesystem::path root_;
};

}  // namespace kagent::model_tools
