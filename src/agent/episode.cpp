#include "kagent/agent/episode.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/agent/prompts.hpp"
#include "kagent/common/error.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/profile/roofline.hpp"

namespace kagent::agent {

EpisodeTools make_episode_tools(const model_tools::Workspace& ws, model_tools::KernelToolContext& ktx,
                                const std::optional<model_tools::ShellSandbox>& sandbox) {
  EpisodeTools out;
  out.tools = model_tools::make_file_tools(ws);
  out.shell_note = "shell is off (--no-shell)";
  if (sandbox) {
    if (auto shell = model_tools::make_shell_tool(ws, *sandbox)) {
      out.tools.push_back(std::move(shell));
      out.shell_note = "";
    } else {
      out.shell_note = "shell is off: " + sandbox->reason;
    }
  }
  for (auto& t : model_tools::make_kernel_tools(ws, ktx)) out.tools.push_back(std::move(t));
  return out;
}

ProblemFacts problem_facts(Evaluator& evaluator, const Op& op, int gpu, bool floors) {
  if (const std::string& no_gpu = evaluator.gpu_problem(); !no_gpu.empty()) throw EnvError(no_gpu);
  ProblemFacts f;
  f.with_signature = op;
  TimingFacts& timing = f.timing;
  std::optional<ResolvedOp> resolved;
  if (op.ref_kind == RefKind::python) {
    resolved = evaluator.resolve(op);
    f.with_signature = resolved->op;
    const RefBaselines& b = evaluator.pytorch_baselines(*resolved);
    timing.eager_ms = b.eager.median_ms;
    if (b.compile) timing.compile_ms = b.compile->median_ms;
    timing.compile_missing = b.compile_error;
  } else {
    timing.native_reference = true;
    timing.compile_ms = op.compile_baseline_ms;
  }
  if (!floors) return f;
  if (resolved) {
    // The reference's own error against fp64, stated under Correctness. A trial that fails here
    // fails the first evaluation too, which reports it: the run goes on without the figures.
    try {
      timing.reference_precision = evaluator.reference_precision(*resolved);
    } catch (const Error& e) {
      spdlog::warn("the reference's error against float64 was not measured: {}", e.what());
    }
    // What cuBLAS and cuDNN take for the reference's own GEMMs and convolutions, stated beside the
    // floors: a library step or a kernel of one's own is then chosen on numbers.
    try {
      timing.library_times = evaluator.library_times(*resolved);
      if (timing.library_times->calls.empty() && !timing.library_times->note.empty())
        spdlog::debug("library calls: {}", timing.library_times->note);
    } catch (const Error& e) {
      spdlog::warn("the reference's library calls were not timed: {}", e.what());
    }
  }
  // The memory floor at the best bandwidth measured on this GPU and the compute floor at its measured
  // FP32 and tensor-core rates (cached per GPU and driver), else the memory floor at a datasheet
  // figure, said as such.
  std::string why;
  const std::optional<DevicePeaks> peaks = evaluator.device_peaks(&why);
  const std::optional<profile::MemoryRoof> roof =
      peaks ? std::optional<profile::MemoryRoof>(profile::memory_roof(*peaks)) : std::nullopt;
  if (roof && roof->gbs > 0) {
    timing.peaks = peaks;
    timing.bandwidth_gbs = roof->gbs;
    timing.theoretical_gbs = peaks->theoretical_gbs;
    timing.bandwidth_source = fmt::format(
        "the best bandwidth measured on this GPU, by its {} (the theoretical {:.0f} GB/s, memory clock x bus width, "
        "is the bound no kernel passes)",
        roof->by, peaks->theoretical_gbs);
  } else if (GpuInventory inv = query_gpus(); gpu < static_cast<int>(inv.gpus.size())) {
    timing.bandwidth_gbs = datasheet_bandwidth_gbs(inv.gpus[static_cast<size_t>(gpu)].name);
    timing.theoretical_gbs = timing.bandwidth_gbs;
    timing.bandwidth_source =
        fmt::format("this GPU's datasheet bandwidth (no measured one: {}); copies reach about 89% of it", why);
  }
  return f;
}

ProblemFacts facts_without_gpu(const Op& op, const std::string& why) {
  ProblemFacts f;
  f.with_signature = op;
  f.timing.not_measured = fmt::format("no GPU: {}", why);
  return f;
}

std::vector<llm::Message> episode_opening(const Op& op, const ProblemFacts& facts, int gpu, const AgentOptions& budget,
                                          const EpisodeTools& tools, const std::filesystem::path& prompts_dir,
                                          const std::filesystem::path& skills_dir) {
  const auto values =
      task_values(op, facts.with_signature, facts.timing, gpu_text(gpu), budget, tools.tools, tools.shell_note);
  return opening_messages(prompts_dir.empty() ? default_prompts_dir() : prompts_dir,
                          skills_dir.empty() ? default_skills_dir() : skills_dir, values);
}

}  // namespace kagent::agent
