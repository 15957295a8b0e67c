#include "kagent/sandbox/python_paths.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kagent/sandbox/process.hpp"

namespace kagent::sandbox {

namespace {

namespace fs = std::filesystem;

// sys.path without the script's folder (''), prefixes, and the user site only if enabled.
constexpr const char* kProbe =
    "import json, site, sys\n"
    "paths = [p for p in sys.path if p]\n"
    "paths += [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]\n"
    "if site.ENABLE_USER_SITE:\n"
    "    paths.append(site.getusersitepackages())\n"
    "print(json.dumps({'paths': paths, 'executable': sys.executable}))\n";

}  // namespace

std::vector<std::string> python_paths_from_json(const std::string& text) {
  std::vector<std::string> out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("paths") || !j["paths"].is_array()) return out;
  for (const auto& p : j["paths"]) {
    if (!p.is_string()) continue;
    std::error_code ec;
    fs::path path = fs::weakly_canonical(p.get<std::string>(), ec);
    if (ec || !path.is_absolute() || !fs::is_directory(path, ec)) continue;
    // A zip of the standard library names a file that may not exist; a home directory itself, or
    // "/", would show far more than Python: only what lies below them is taken.
    const std::string s = path.string();
    if (s == "/" || s == "/root" || path.parent_path() == "/home") continue;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

namespace {

struct PythonInstall {
  std::string executable;
  std::vector<std::string> paths;
};

const PythonInstall& python_install() {
  static const PythonInstall install = [] {
    PythonInstall p;
    ProcessResult r = run_capture({"python3", "-c", kProbe}, std::chrono::seconds(30));
    if (!r.started || r.exit_code != 0) {
      spdlog::debug("python3 did not say where it is installed: {}", r.output);
      return p;
    }
    // The JSON is the last line (a sitecustomize may print before it).
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const size_t nl = out.rfind('\n');
    const std::string last = out.substr(nl == std::string::npos ? 0 : nl + 1);
    p.paths = python_paths_from_json(last);
    nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
    if (j.is_object() && j.contains("executable") && j["executable"].is_string()) {
      std::error_code ec;
      const fs::path exe = j["executable"].get<std::string>();
      if (exe.is_absolute() && fs::exists(exe, ec)) p.executable = exe.string();
    }
    return p;
  }();
  return install;
}

}  // namespace

const std::vector<std::string>& python_install_paths() {
  return python_install().paths;
}

const std::string& python_executable() {
  return python_install().executable;
}

}  // namespace kagent::sandbox
