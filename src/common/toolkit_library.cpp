#include "kagent/common/toolkit_library.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>

namespace kagent {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::string> toolkit_dirs(const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs = {"lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"};
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  std::vector<std::string> out;
  for (const std::string& base : {env("CUDA_HOME"), std::string("/usr/local/cuda")}) {
    if (base.empty()) continue;
    for (const auto& d : dirs) out.push_back(base + "/" + d);
  }
  return out;
}

void add_glob(const std::string& pattern, std::vector<std::string>& out) {
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  }
  globfree(&g);
}

// Where NVIDIA's wheels (nvidia-cudnn-cu12, nvidia-cublas, ...) put their libraries.
std::vector<std::string> wheel_dirs() {
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (!env(var).empty()) prefixes.push_back(env(var));
  if (!env("HOME").empty()) prefixes.push_back(env("HOME") + "/.local");
  prefixes.push_back("/usr/local");
  prefixes.push_back("/usr");
  std::vector<std::string> out;
  for (const auto& p : prefixes)
    for (const char* packages : {"site-packages", "dist-packages"})
      add_glob(p + "/lib/python3*/" + packages + "/nvidia/*/lib", out);
  add_glob("/usr/lib/python3/dist-packages/nvidia/*/lib", out);
  return out;
}

}  // namespace

void* open_toolkit_library(const std::string& soname, const std::vector<std::string>& extra_dirs, std::string* why) {
  std::vector<std::string> tries;
  for (const auto& d : toolkit_dirs(extra_dirs)) tries.push_back(d + "/" + soname);
  tries.push_back(soname);
  std::string failure;
  for (const auto& t : tries) {
    if (void* l = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL)) return l;
    const char* e = dlerror();
    failure = e ? e : "unknown error";
  }
  if (why) *why = soname + " could not be loaded (" + failure + ")";
  return nullptr;
}

std::vector<std::string> cuda_library_dirs() {
  std::vector<std::string> dirs;
  std::stringstream user(env("KAGENT_LIBRARY_PATH"));
  for (std::string d; std::getline(user, d, ':');)
    if (!d.empty()) dirs.push_back(d);
  for (const auto& d : toolkit_dirs({})) dirs.push_back(d);
  for (const auto& d : wheel_dirs()) dirs.push_back(d);
  return dirs;
}

void* open_cuda_library(const std::vector<std::string>& sonames, std::string* why, std::string* path) {
  const std::vector<std::string> dirs = cuda_library_dirs();
  std::string failure;
  for (const auto& soname : sonames) {
    for (const auto& d : dirs) {
      const std::string t = d + "/" + soname;
      if (void* l = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        if (path) *path = t;
        return l;
      }
      const char* e = dlerror();
      // "cannot open shared object file" for every absent file says nothing: keep the others.
      if (e && std::string(e).find("No such file") == std::string::npos) failure = e;
    }
  }
  for (const auto& soname : sonames) {
    if (void* l = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (path) *path = fmt::format("{} (the loader's search path)", soname);
      return l;
    }
    const char* e = dlerror();
    if (failure.empty() && e) failure = e;
  }
  if (why) {
    *why = fmt::format(
        "{} not found (looked in $KAGENT_LIBRARY_PATH, the CUDA toolkit, NVIDIA's Python wheels: {}; then the "
        "loader's path{}{})",
        sonames.front(), dirs.empty() ? std::string("none") : fmt::format("{}", fmt::join(dirs, ", ")),
        failure.empty() ? "" : ": ", failure);
  }
  return nullptr;
}

}  // namespace kagent
