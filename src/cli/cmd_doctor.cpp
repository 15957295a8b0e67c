// kagent doctor: one line per thing kagent needs, ok or missing, and what it is needed for.
// Exits 3 when something required is missing (always: NVRTC, CUDA headers, a GPU, kagent-runner;
// with --require, also torch, llm or cupti).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include <cuda.h>  // CUDA_VERSION: the toolkit kagent was built against

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/gpu/libraries.hpp"
#include "kagent/llm/config.hpp"
#include "kagent/llm/context_window.hpp"
#include "kagent/llm/probe.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent::cli {

namespace {

struct Check {
  std::string name;
  bool ok = false;
  bool required = false;
  std::string detail;
};

std::string gib(int64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
}

void check_gpus(std::vector<Check>& out, nlohmann::json& gpus_json) {
  GpuInventory inv = query_gpus();
  if (inv.driver_loaded) {
    out.push_back({"driver", true, true,
                   fmt::format("CUDA driver API {}.{}", inv.driver_version / 1000, (inv.driver_version % 1000) / 10)});
  } else {
    out.push_back({"driver", false, true, inv.problem});
  }
  if (inv.gpus.empty()) {
    out.push_back({"gpu", false, true, inv.driver_loaded ? inv.problem : "no driver, so no GPU"});
    return;
  }
  for (const auto& g : inv.gpus) {
    out.push_back({fmt::format("gpu {}", g.index), true, true,
                   fmt::format("{}, sm_{}{}, {} SMs, {}, L2 {} MiB", g.name, g.cc_major, g.cc_minor, g.sm_count,
                               gib(g.memory_bytes), g.l2_bytes >> 20)});
    gpus_json.push_back({{"index", g.index},
                         {"name", g.name},
                         {"cc", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
                         {"sms", g.sm_count},
                         {"memory_bytes", g.memory_bytes},
                         {"l2_bytes", g.l2_bytes}});
  }
}

void check_toolkit(std::vector<Check>& out) {
  out.push_back({"nvrtc", true, true,
                 fmt::format("NVRTC {} (built against CUDA {}.{})", Compiler::nvrtc_version(), CUDA_VERSION / 1000,
                             (CUDA_VERSION % 1000) / 10)});
  CudaPaths p = find_cuda_paths();
  std::error_code ec;
  bool headers = std::filesystem::exists(p.include_dir / "cuda_fp16.h", ec) &&
                 std::filesystem::exists(p.include_dir / "mma.h", ec);
  bool cccl = !p.cccl_dir.empty() || std::filesystem::exists(p.include_dir / "cuda" / "pipeline", ec);
  out.push_back({"cuda headers", headers && cccl, true,
                 headers && cccl ? fmt::format("{} (fp16/bf16, mma, CCCL)", p.include_dir.string())
                                 : fmt::format("{}: cuda_fp16.h, mma.h or CCCL missing; set KAGENT_CUDA_HOME",
                                               p.include_dir.string())});
  // CUPTI: looked for, not loaded (loading it would initialise profiling state).
  std::filesystem::path home =
      std::getenv("KAGENT_CUDA_HOME") ? std::getenv("KAGENT_CUDA_HOME") : KAGENT_CUDA_HOME_DEFAULT;
  std::string cupti;
  for (auto dir : {home / "extras" / "CUPTI" / "lib64", home / "lib64", home / "targets" / "x86_64-linux" / "lib"}) {
    if (std::filesystem::exists(dir / "libcupti.so", ec)) {
      cupti = (dir / "libcupti.so").string();
      break;
    }
  }
  out.push_back(
      {"cupti", !cupti.empty(), false, cupti.empty() ? "libcupti.so not found (needed by kagent profile)" : cupti});
}

// cuBLASLt and cuDNN for plans' library steps: loaded as the runner loads them (the toolkit's,
// else a PyTorch install's) and asked their versions; no GPU needed.
void check_libraries(std::vector<Check>& out) {
  std::string why;
  if (const CublasLtApi* lt = load_cublaslt(&why))
    out.push_back({"cublaslt", true, false, cublaslt_description(*lt)});
  else
    out.push_back({"cublaslt", false, false, fmt::format("{} (needed by gemm steps)", why)});
  why.clear();
  if (const CudnnApi* dnn = load_cudnn(&why))
    out.push_back({"cudnn", true, false, cudnn_description(*dnn)});
  else
    out.push_back({"cudnn", false, false, fmt::format("{} (needed by conv steps)", why)});
}

void check_runner(std::vector<Check>& out) {
  auto runner = std::filesystem::path(self_dir()) / "kagent-runner";
  std::error_code ec;
  bool ok = std::filesystem::exists(runner, ec) && access(runner.c_str(), X_OK) == 0;
  out.push_back({"runner", ok, true, ok ? runner.string() : fmt::format("{} not found", runner.string())});
}

void check_python(std::vector<Check>& out) {
  using namespace std::chrono_literals;
  auto py = run_capture({"python3", "-c", "import sys; print(sys.version.split()[0])"}, 20s);
  if (!py.started || py.exit_code != 0) {
    out.push_back({"python3", false, false, "python3 not found (needed for PyTorch references)"});
    out.push_back({"torch", false, false, "needs python3"});
    return;
  }
  out.push_back({"python3", true, false, fmt::format("Python {}", py.output.substr(0, py.output.find('\n')))});
  auto torch = run_capture({"python3", "-c",
                            "import torch; print(torch.__version__, 'CUDA', torch.version.cuda, 'GPU' if "
                            "torch.cuda.is_available() else 'no GPU')"},
                           120s);
  bool ok = torch.started && torch.exit_code == 0;
  std::string detail =
      ok ? torch.output.substr(0, torch.output.find('\n'))
         : (torch.timed_out ? "import torch timed out" : "torch not importable (needed for PyTorch references)");
  out.push_back({"torch", ok, false, detail});
  // The reference server is kagent's own Python package: found through the tools folder.
  const std::string tools = RefServer::tools_dir();
  auto server = run_capture(
      {"env", "PYTHONPATH=" + tools, "python3", "-c", "import kagent_ref; print(kagent_ref.__file__)"}, 60s);
  bool found = server.started && server.exit_code == 0;
  out.push_back(
      {"ref server", found, false,
       found
           ? fmt::format("kagent_ref in {} (python3 -m kagent_ref; PyTorch references)", tools)
           : fmt::format("kagent_ref not importable from {} (set KAGENT_TOOLS_DIR to kagent's tools/ folder)", tools)});
}

// The configured endpoint (flags, environment, config file), then one cheap request that says
// whether it answers and calls tools. Names of variables only: key values are never printed.
void check_llm(std::vector<Check>& out, const llm::LlmFlags& flags) {
  std::vector<std::string> set;
  for (const char* var : {"KAGENT_PROVIDER", "KAGENT_BASE_URL", "KAGENT_MODEL", "KAGENT_API_KEY", "OPENAI_BASE_URL",
                          "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') set.push_back(var);
  }
  std::error_code ec;
  const bool file = std::filesystem::exists(llm::default_config_path(), ec);
  if (set.empty() && !file && flags.model.empty() && flags.provider.empty() && flags.base_url.empty()) {
    out.push_back({"llm endpoint", false, false,
                   "none configured: set KAGENT_BASE_URL/OPENAI_BASE_URL, KAGENT_MODEL and a key variable (or "
                   "ANTHROPIC_API_KEY), or write " +
                       llm::default_config_path() + " (needed by kagent optimize)"});
    return;
  }
  llm::LlmConfig config;
  try {
    config = llm::resolve_llm_config(flags, nullptr);
  } catch (const std::exception& e) {
    out.push_back({"llm endpoint", false, false,
                   fmt::format("{}{}", set.empty() ? "" : fmt::format("set: {}; ", fmt::join(set, ", ")), e.what())});
    return;
  }
  config.http.max_attempts = 2;  // a check, not a run: fail fast
  config.http.idle_timeout = std::chrono::seconds(60);
  llm::ProbeResult p = llm::probe_tool_calling(*llm::make_provider(config));
  out.push_back({"llm endpoint", p.tool_called, false, config.describe() + ": " + p.detail});
  // The window each optimize request is sized to (llm/context_window.hpp): the user's, the
  // server's, or the default, said which.
  const llm::ContextWindow w = llm::find_context_window(config);
  out.push_back({"llm context", true, false,
                 fmt::format("{} tokens ({}{})", w.tokens, w.source, w.probe_note.empty() ? "" : ": " + w.probe_note)});
}

void check_cache(std::vector<Check>& out) {
  auto dir = CompileCache::default_dir();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  bool ok = !ec && access(dir.c_str(), W_OK) == 0;
  out.push_back({"cache", ok, false,
                 ok ? dir.string() + " (writable)" : dir.string() + " is not writable: compiles will not be cached"});
}

}  // namespace

Command add_doctor_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto require = std::make_shared<std::vector<std::string>>();
  auto flags = std::make_shared<llm::LlmFlags>();
  CLI::App* sub = app.add_subcommand("doctor", "Check the GPU, driver, toolkit, Python/torch and LLM settings");
  set_examples(sub, {
                        {"kagent doctor",
                         "one line per dependency: NVRTC, driver, GPUs, CUPTI, Python, torch, the LLM endpoint"},
                        {"kagent doctor --require torch,llm --provider openai --base-url http://127.0.0.1:8000/v1",
                         "exit 3 unless torch and this endpoint work"},
                    });
  sub->add_flag("--json", *json, "Print JSON");
  sub->add_option("--require", *require, "Also require these: torch, llm, cupti")
      ->delimiter(',')
      ->check(CLI::IsMember({"torch", "llm", "cupti"}));
  add_llm_flags(sub, flags.get(), LlmFlagsFor::doctor);

  return {sub, [json, require, flags]() {
            std::vector<Check> checks;
            nlohmann::json gpus = nlohmann::json::array();
            check_toolkit(checks);
            check_libraries(checks);
            check_gpus(checks, gpus);
            check_runner(checks);
            check_python(checks);
            check_llm(checks, *flags);
            check_cache(checks);
            std::set<std::string> extra(require->begin(), require->end());
            for (auto& c : checks)
              if (extra.count(c.name) || (c.name == "llm endpoint" && extra.count("llm")) ||
                  ((c.name == "python3" || c.name == "ref server") && extra.count("torch")))
                c.required = true;

            bool all_required = true;
            for (const auto& c : checks) all_required &= c.ok || !c.required;
            if (*json) {
              nlohmann::json j = {{"version", KAGENT_VERSION}, {"ok", all_required}, {"gpus", gpus}};
              for (const auto& c : checks)
                j["checks"].push_back({{"name", c.name}, {"ok", c.ok}, {"required", c.required}, {"detail", c.detail}});
              print_json(j);
            } else {
              TextTable t({"status", "check", "detail"});
              for (const auto& c : checks)
                t.add_row({c.ok ? "ok" : (c.required ? "MISSING" : "missing"), c.name, c.detail});
              fmt::print("kagent {}\n{}", KAGENT_VERSION, t.render());
              if (!all_required) fmt::print("\nSomething required is missing (MISSING above).\n");
            }
            return static_cast<int>(all_required ? ExitCode::ok : ExitCode::environment);
          }};
}

}  // namespace kagent::cli
