#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/gpu/devices.hpp"

namespace kagent::cli {

void print_json(const nlohmann::json& j) {
  fmt::print("{}\n", j.dump(2));
}

void write_output_file(const std::string& path, const std::string& contents, const char* what) {
  const std::filesystem::path p(path);
  std::error_code ec;  // a folder that cannot be made shows up as write_file_atomic's error, naming the path
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  write_file_atomic(p, contents);
  fmt::print(stderr, "kagent: wrote {} to {}\n", what, p.string());
}

std::vector<int> parse_gpus(const std::string& text, const GpuInventory& inv) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0)
      throw InputError(fmt::format("--gpus {}: expected GPU indices like 0,1,3", text));
    if (inv.driver_loaded && v >= static_cast<long>(inv.gpus.size()))
      throw InputError(fmt::format("--gpus {}: this machine has {} GPU(s)", text, inv.gpus.size()));
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (std::set<int>(out.begin(), out.end()).size() != out.size())
    throw InputError(fmt::format("--gpus {}: a GPU is listed twice (use --jobs for more workers per GPU)", text));
  return out;
}

std::shared_ptr<judge::Prebuilder> make_prebuilder(int build_jobs, const std::string& arch, int gpu, int gpu_workers,
                                                   std::shared_ptr<CompileCache> cache) {
  if (build_jobs == 0) return nullptr;
  return std::make_shared<judge::Prebuilder>(
      std::move(cache), arch.empty() ? default_arch(gpu, nullptr) : arch,
      build_jobs > 0 ? build_jobs : judge::default_prebuild_threads(gpu_workers));
}

}  // namespace kagent::cli
