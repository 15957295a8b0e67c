// kagent-compile: NVRTC on untrusted source, in a process of its own. kagent starts it under the
// compile-worker policy (scrubbed environment, no_new_privs, no file writes) and sends one JSON
// request on stdin: {"name": ..., "source": ..., "options": [...]}. Before compiling, the worker
// seals itself (sandbox/private_view.hpp) into its own user, mount and network namespaces and a
// file system view holding only the directories named by --visible (the toolkit's headers and NVRTC's libraries):
// NVRTC's preprocessor opens #include files itself, and a macro can build any path, so the only files it can reach are
// the ones that exist in the view. No /proc (no /proc/self/environ), no /etc, no home directories, no host /tmp. kagent
// also bounds its address space (RLIMIT_AS) and CPU time (RLIMIT_CPU) and kills it at a wall-clock timeout: a macro or
// template that expands without bound ends here, as that candidate's failure.
//
// Reply on stdout: one JSON line {"result": <nvrtcResult>, "log": ..., "cubin_bytes": N,
// "isolation": "namespaces" | "process", "warning": ...}, then N bytes of cubin; "refused": true
// when the source was too large to take.
// Exit 0 when a reply was written, 2 for a bad request, 3 when the sandbox could not be made
// (the reply says why).
#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/sandbox/private_view.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxRequest = size_t{64} << 20;

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void reply(const json& head, const std::string& cubin = {}) {
  json h = head;
  h["cubin_bytes"] = cubin.size();
  write_all(1, h.dump(-1, ' ', false, json::error_handler_t::replace) + "\n" + cubin);
}

// The directory libnvrtc was loaded from: NVRTC loads its builtins library from there during
// the first compile, so the view must hold it too.
std::string nvrtc_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr) return "";
  std::error_code ec;
  fs::path p = fs::canonical(info.dli_fname, ec);
  return ec ? "" : p.parent_path().string();
}

// Loads NVRTC's builtins now, while the host's libraries are still visible (a loader that finds
// them through /etc/ld.so.cache would not find them in the view).
void preload_builtins(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with("libnvrtc-builtins.so.")) dlopen(e.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> visible;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--visible" && i + 1 < argc) {
      visible.push_back(argv[++i]);
    } else if (a == "--version") {
      int major = 0, minor = 0;
      nvrtcVersion(&major, &minor);
      fmt::print("kagent-compile {} (NVRTC {}.{})\n", KAGENT_VERSION, major, minor);
      return 0;
    } else {
      fmt::print(stderr, "usage: kagent-compile [--visible DIR]... < request.json (started by kagent)\n");
      return 2;
    }
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxRequest) {
      // The source's fault, not the worker's: kagent reports it as the candidate's failure.
      reply({{"result", -1},
             {"refused", true},
             {"log", "the source is too large to compile (the request is over 64 MiB)"}});
      return 2;
    }
  }
  json req = json::parse(text, nullptr, false);
  if (req.is_discarded() || !req.is_object() || !req.contains("source") || !req["source"].is_string()) {
    reply({{"result", -1}, {"log", "malformed compile request"}});
    return 2;
  }
  const std::string source = req["source"].get<std::string>();
  const std::string name = req.value("name", std::string("candidate.cu"));
  std::vector<std::string> options;
  for (const auto& o : req.value("options", json::array()))
    if (o.is_string()) options.push_back(o.get<std::string>());

  const std::string lib_dir = nvrtc_dir();
  preload_builtins(lib_dir);
  if (!lib_dir.empty()) visible.push_back(lib_dir);
  json head = {{"isolation", "namespaces"}};
  if (std::string why = kagent::sandbox::enter_private_view(visible); !why.empty()) {
    if (req.value("require_namespaces", false)) {
      reply({{"result", -1}, {"log", "compile worker: no private file system view: " + why}, {"isolation", "none"}});
      return 3;
    }
    head["isolation"] = "process";
    head["warning"] = "compile worker: no private file system view (" + why +
                      "); NVRTC runs in a separate process with a scrubbed environment, but an #include can read "
                      "host files this user can read";
  }

  nvrtcProgram prog{};
  nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    head["result"] = static_cast<int>(rc);
    head["log"] = fmt::format("{}: nvrtcCreateProgram: {}", name, nvrtcGetErrorString(rc));
    reply(head);
    return 0;
  }
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  std::string log, cubin;
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
    log.assign(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
  }
  if (rc == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
    cubin.assign(n, '\0');
    nvrtcGetCUBIN(prog, cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  head["result"] = static_cast<int>(rc);
  head["log"] = log;
  head["error"] = nvrtcGetErrorString(rc);
  reply(head, cubin);
  return 0;
}
