// compile_latency: how long a candidate takes to compile, cold (NVRTC, empty cache) and cached
// (a cache hit), in the sandboxed compile worker (what kagent does) and in-process (what it did
// before the worker, for comparison), and through the kagent CLI end to end. Prints one table; medians of
// --reps runs. Usage: compile_latency [--reps N] [--arch sm_90a] [files.cu...]
//   (default files: every bundled example except the deliberately broken one)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/sandbox/process.hpp"

using namespace kagent;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

fs::path fresh_dir(const fs::path& root, int i) {
  auto d = root / fmt::format("c{}", i);
  fs::remove_all(d);
  return d;
}

std::string fmt_ms(double s) {
  return fmt::format("{:.1f}", s * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::string arch = "sm_90a";
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--arch") && i + 1 < argc)
      arch = argv[++i];
    else
      files.emplace_back(argv[i]);
  }
  if (files.empty()) {
    for (auto& e : fs::recursive_directory_iterator(fs::path(KAGENT_SOURCE_DIR) / "examples"))
      if (e.path().extension() == ".cu" && e.path().filename().string().find("compile_error") == std::string::npos)
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
  }
  const fs::path root = fs::temp_directory_path() / fmt::format("kagent-compile-bench-{}", getpid());
  const std::string kagent = (fs::path(KAGENT_BINARY_DIR) / "kagent").string();

  // The first NVRTC call in a process also loads NVRTC's builtins; measured once, on its own.
  {
    Compiler c(find_cuda_paths(), nullptr);
    auto t0 = Clock::now();
    c.compile(load_candidate(files.front()), arch);
    fmt::print("first NVRTC call in this process (includes library start-up): {} ms\n\n",
               fmt_ms(std::chrono::duration<double>(Clock::now() - t0).count()));
  }

  fmt::print("arch {}, NVRTC {}, {} repetitions, medians\n", arch, Compiler::nvrtc_version(), reps);
  TextTable t({"candidate", "cold ms (worker)", "cold ms (in-process)", "cached ms", "cold/cached", "CLI cached ms",
               "kernels"});
  for (const auto& f : files) {
    Candidate cand = load_candidate(f);
    std::vector<double> cold, cold_in, hot, cli;
    size_t kernels = 0;
    for (int i = 0; i < reps; ++i) {
      auto cache = std::make_shared<CompileCache>(fresh_dir(root, i));
      Compiler c(find_cuda_paths(), cache);
      auto r = c.compile(cand, arch);
      if (!r.ok) {
        fmt::print(stderr, "{}: compile failed:\n{}\n", f.string(), r.log);
        return 1;
      }
      kernels = r.kernels.size();
      cold.push_back(r.seconds);
      Compiler in_process(find_cuda_paths(), nullptr, CompileIsolation::in_process);
      auto in = in_process.compile(cand, arch);
      // A failed compile returns early: its time is no compile time, so it is left out (and said).
      if (in.ok)
        cold_in.push_back(in.seconds);
      else if (i == 0)
        fmt::print(stderr, "warning: {}: the in-process compile failed:\n{}\n", f.string(), in.log);
      auto h = c.compile(cand, arch);
      hot.push_back(h.seconds);
      if (!h.cache_hit) fmt::print(stderr, "warning: {}: expected a cache hit\n", f.string());
      // End to end: a new kagent process, cache warm, arch given (no driver query).
      auto t0 = Clock::now();
      auto pr = run_capture(
          {"env", "KAGENT_CACHE_DIR=" + cache->dir().string(), kagent, "compile", "--arch", arch, f.string()},
          std::chrono::seconds(120));
      cli.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      if (pr.exit_code != 0) fmt::print(stderr, "warning: kagent compile exited {}\n", pr.exit_code);
    }
    double c = median(cold), h = median(hot);
    t.add_row({fs::relative(f, KAGENT_SOURCE_DIR).string(), fmt_ms(c), cold_in.empty() ? "failed" : fmt_ms(median(cold_in)),
               fmt::format("{:.2f}", h * 1e3), fmt::format("{:.0f}x", c / std::max(h, 1e-9)), fmt_ms(median(cli)),
               std::to_string(kernels)});
  }
  fs::remove_all(root);
  fmt::print("{}", t.render());
  return 0;
}
