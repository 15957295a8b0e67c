#include "kagent/serve/problem_path.hpp"

#include <regex>

#include <fmt/format.h>

#include "kagent/common/files.hpp"
#include "kagent/serve/request.hpp"

namespace kagent::serve {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void outside(const std::string& field, const std::string& name, const char* why) {
  throw RequestError(400, field, fmt::format("\"{}\" {}: name a problem relative to the problems root", name, why));
}

// "level1/19": the file level1/19_*.py.
std::optional<fs::path> kernelbench_id(const fs::path& root, const std::string& name, const std::string& field) {
  static const std::regex id(R"((level[0-9]+)/([0-9]+))");
  std::smatch m;
  if (!std::regex_match(name, m, id)) return std::nullopt;
  const std::string prefix = m[2].str() + "_";
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / m[1].str(), ec)) {
    const std::string file = e.path().filename().string();
    if (file.rfind(prefix, 0) == 0 && e.path().extension() == ".py") found.push_back(e.path());
  }
  if (found.empty()) throw RequestError(404, field, fmt::format("no problem {} under the problems root", name));
  if (found.size() > 1)
    throw RequestError(400, field,
                       fmt::format("{} matches {} and {}: name the file", name, found[0].filename().string(),
                                   found[1].filename().string()));
  return found.front();
}

}  // namespace

fs::path resolve_problem(const fs::path& root, const std::string& name, const std::string& field) {
  if (name.empty()) throw RequestError(400, field, "empty");
  if (name.find('\0') != std::string::npos) outside(field, "(with a NUL byte)", "is not a path");
  const fs::path given(name);
  if (given.is_absolute() || name[0] == '~') outside(field, name, "is an absolute path");
  for (const auto& part : given)
    if (part == "..") outside(field, name, "leaves the problems root");
  fs::path path;
  if (auto id = kernelbench_id(root, name, field)) {
    path = *id;
  } else {
    path = root / given;
    std::error_code ec;
    if (fs::is_directory(path, ec))
      path /= "op.json";
    else if (!fs::exists(path, ec) && !given.has_extension())
      path += ".py";  // "level1/19_ReLU"
  }
  // After every symlink is followed: a link inside the root may lead anywhere.
  fs::path resolved;
  if (!resolves_inside(root, path, &resolved)) outside(field, name, "leads outside the problems root");
  std::error_code ec;
  if (!fs::is_regular_file(resolved, ec))
    throw RequestError(404, field, fmt::format("no problem {} under the problems root", name));
  const std::string ext = resolved.extension().string();
  if (ext != ".py" && ext != ".json")
    throw RequestError(400, field, fmt::format("{}: expected a KernelBench .py problem or an op.json", name));
  return resolved;
}

}  // namespace kagent::serve
