#include "kagent/compile/sass.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/text.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent {

namespace {

bool is_hex(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// The instruction text of an nvdisasm code line ("/*0040*/  @P0 LDG.E R2, desc[UR4][R2.64] ;"),
// or empty for any other line.
std::string_view instruction_of(std::string_view line) {
  std::string_view t = trim(line);
  if (!t.starts_with("/*")) return {};
  size_t end = t.find("*/");
  if (end == std::string_view::npos || !is_hex(t.substr(2, end - 2))) return {};
  return trim(t.substr(end + 2));
}

// FFMA from "FFMA R1, R2, R3, R4 ;", LDG from "@!P0 LDG.E.128 R4, ...", skipping a "{" bundle mark.
std::string base_opcode(std::string_view ins) {
  if (ins.starts_with("{")) ins = trim(ins.substr(1));
  if (ins.starts_with("@")) {
    size_t sp = ins.find_first_of(" \t");
    ins = sp == std::string_view::npos ? std::string_view{} : trim(ins.substr(sp));
  }
  size_t end = ins.find_first_of(" \t.;");
  return std::string(ins.substr(0, end));
}

// The function name of ".section .text.NAME,"ax",@progbits", or empty.
std::string section_function(std::string_view line) {
  std::string_view t = trim(line);
  if (!t.starts_with(".section")) return {};
  t = trim(t.substr(8));
  if (!t.starts_with(".text.")) return {};
  t.remove_prefix(6);
  return std::string(t.substr(0, t.find(',')));
}

}  // namespace

std::optional<std::filesystem::path> find_nvdisasm(const CudaPaths& paths) {
  std::vector<std::filesystem::path> dirs;
  if (const char* home = std::getenv("KAGENT_CUDA_HOME"); home != nullptr && *home != '\0')
    dirs.push_back(std::filesystem::path(home) / "bin");
  // include_dir is <cuda>/include or <cuda>/targets/<triple>/include.
  dirs.push_back(paths.include_dir.parent_path() / "bin");
  dirs.push_back(paths.include_dir.parent_path().parent_path().parent_path() / "bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const auto& d : dirs) {
    std::error_code ec;
    auto p = d / "nvdisasm";
    if (std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p;
  }
  std::string in_path = find_in_path("nvdisasm");
  if (!in_path.empty()) return std::filesystem::path(in_path);
  // A toolkit without it (the runtime images, a minimal install): Triton's wheels, which PyTorch
  // installs, carry one in triton/backends/nvidia/bin. Located without importing triton.
  if (!find_in_path("python3").empty()) {
    ProcessResult r = run_capture(
        {"python3", "-c",
         "import importlib.util as u, os\ns = u.find_spec('triton')\n"
         "print(os.path.join(os.path.dirname(s.origin), 'backends', 'nvidia', 'bin', 'nvdisasm') if s and s.origin "
         "else '')"},
        std::chrono::seconds(20));
    std::string path = r.started && r.exit_code == 0 ? r.output : "";
    while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
    std::error_code ec;
    if (!path.empty() && std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0)
      return std::filesystem::path(path);
  }
  return std::nullopt;
}

std::vector<SassFunction> parse_nvdisasm(std::string_view text) {
  std::vector<SassFunction> fns;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (std::string name = section_function(line); !name.empty()) {
      fns.push_back(SassFunction{name, {}, 0, 0, 0, {}});
      continue;
    }
    if (fns.empty()) continue;
    SassFunction& f = fns.back();
    std::string_view t = trim(line);
    if (std::string_view ins = instruction_of(line); !ins.empty()) {
      std::string op = base_opcode(ins);
      if (op.empty()) continue;
      ++f.instructions;
      ++f.opcodes[op];
      if (op == "LDL") ++f.local_loads;
      if (op == "STL") ++f.local_stores;
      f.lines.emplace_back(line);
    } else if (t.starts_with("//##") || (t.starts_with(".L") && t.ends_with(":"))) {
      f.lines.emplace_back(line);  // source line info (-g) and branch targets
    }
  }
  return fns;
}

std::vector<SassFunction> disassemble(const std::string& cubin, const CudaPaths& paths,
                                      std::chrono::milliseconds timeout) {
  auto tool = find_nvdisasm(paths);
  if (!tool)
    throw EnvError(fmt::format(
        "no nvdisasm: looked beside the CUDA toolkit of {}, in /usr/local/cuda/bin, in PATH and in the Triton "
        "package python3 imports (triton/backends/nvidia/bin). It is the toolkit's cuda-nvdisasm package (NVIDIA's "
        "apt repository: cuda-nvdisasm-<major>-<minor>), and `pip install triton` brings one; or set "
        "KAGENT_CUDA_HOME to a full toolkit",
        paths.include_dir.string()));
  std::string tmpl = (std::filesystem::temp_directory_path() / "kagent-sass-XXXXXX").string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw EnvError(fmt::format("cannot create a temporary file for the cubin ({})", tmpl));
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove(path); }
  } remove{tmpl};
  {
    std::ofstream out(tmpl, std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out) throw EnvError(fmt::format("cannot write the cubin to {}", tmpl));
  }
  ProcessResult r = run_capture({tool->string(), "-c", "-g", tmpl}, timeout);
  if (!r.started) throw EnvError(fmt::format("cannot run {}", tool->string()));
  if (r.timed_out) throw std::runtime_error(fmt::format("nvdisasm took longer than {} ms", timeout.count()));
  if (r.exit_code != 0)
    throw std::runtime_error(fmt::format("nvdisasm exited {}: {}", r.exit_code, r.output.substr(0, 2000)));
  return parse_nvdisasm(r.output);
}

std::string render_sass(const std::vector<SassFunction>& fns, bool listing, const std::string& only, size_t max_lines) {
  std::string out;
  bool found = false;
  for (const auto& f : fns) {
    if (!only.empty() && f.name != only) continue;
    found = true;
    std::vector<std::pair<std::string, int>> top(f.opcodes.begin(), f.opcodes.end());
    std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (top.size() > 12) top.resize(12);
    std::string freq;
    for (const auto& [op, n] : top) freq += fmt::format("{}{} {}", freq.empty() ? "" : ", ", op, n);
    out += fmt::format(
        "kernel {}: {} instructions; local memory: {} loads (LDL), {} stores (STL){}\n  most frequent: {}\n", f.name,
        f.instructions, f.local_loads, f.local_stores,
        f.local_loads + f.local_stores > 0 ? " -- register spills or a local array" : "", freq);
    if (listing) {
      size_t n = std::min(max_lines, f.lines.size());
      for (size_t i = 0; i < n; ++i) out += f.lines[i] + "\n";
      if (n < f.lines.size()) out += fmt::format("  ... {} more lines not shown\n", f.lines.size() - n);
    }
  }
  if (!found) {
    std::string names;
    for (const auto& f : fns) names = names.empty() ? f.name : fmt::format("{}, {}", names, f.name);
    out += only.empty()
               ? "no functions in the disassembly\n"
               : fmt::format("no kernel '{}' in the cubin (it has: {})\n", only, names.empty() ? "none" : names);
  }
  return out;
}

}  // namespace kagent
