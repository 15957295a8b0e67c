#include "kagent/tools/kernel_tools.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/compile/kernel_info.hpp"

namespace kagent::tools {

namespace {

nlohmann::json path_schema(const std::string& what) {
  return {{"type", "object"},
          {"properties", {{"path", {{"type", "string"}, {"description", what}}}}},
          {"required", {"path"}},
          {"additionalProperties", false}};
}

// The candidate at a workspace path, parsed; the model's mistakes (no file, bad plan) as ToolError.
Candidate load_from(const Workspace& ws, const nlohmann::json& args, std::string& rel) {
  rel = arg_string(args, "path");
  auto abs = ws.resolve(rel);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(abs, ec)) throw ToolError(fmt::format("no file '{}' in the workspace", rel));
  try {
    Candidate c = parse_candidate(read_text_file(abs), rel);
    return c;
  } catch (const InputError& e) {
    throw ToolError(e.what());
  }
}

std::string compile_text(const CompileResult& r) {
  if (!r.ok) return fmt::format("compile FAILED ({}):\n{}", r.arch, r.log);
  std::string out = fmt::format("compiled for {} in {:.2f} s{}\n{}", r.arch, r.seconds, r.cache_hit ? " (cached)" : "",
                                render_kernel_table(r.kernels));
  if (!r.log.empty() && r.log.find("warning") != std::string::npos) out += "\ncompiler warnings:\n" + r.log;
  return out;
}

class CompileTool : public Tool {
 public:
  CompileTool(const Workspace& ws, KernelToolContext& ctx) : ws_(ws), ctx_(ctx) {}
  llm::ToolSpec spec() const override {
    return {"compile",
            "Compile a candidate .cu file of the workspace with NVRTC for the target GPU and check its launch plan "
            "against the operator's tensors and the kernels' parameters. Returns the per-kernel resource table "
            "(registers, shared memory, stack, spills, max threads per block) or the errors with line numbers.",
            path_schema("the candidate file, relative to the workspace")};
  }
  ToolResult run(const nlohmann::json& args) override {
    std::string rel;
    Candidate c = load_from(ws_, args, rel);
    try {
      CompileResult r = compile_checked(c, &ctx_.op, *ctx_.compiler, ctx_.arch);
      return {compile_text(r), !r.ok, {{"ok", r.ok}, {"kernels", r.kernels}, {"log", r.log}}};
    } catch (const InputError& e) {  // the plan does not match the operator or the kernels
      return {fmt::format("plan error: {}", e.what()), true, {{"ok", false}, {"error", e.what()}}};
    }
  }

 private:
  const Workspace& ws_;
  KernelToolContext& ctx_;
};

class EvaluateTool : public Tool {
 public:
  EvaluateTool(const Workspace& ws, KernelToolContext& ctx) : ws_(ws), ctx_(ctx) {}
  llm::ToolSpec spec() const override {
    return {"evaluate",
            "Evaluate a candidate: compile it, run it against the reference on fresh random inputs (several trials), "
            "then time it (L2 flushed before each sample, outputs re-checked during timing). Returns correctness "
            "(with the first mismatch when wrong), the timing summary, bandwidth, speedups against torch eager and "
            "torch.compile, and the reward tier (-1 wrong, 1 correct, 2 faster than eager, 3 also <= 0.95x compile).",
            path_schema("the candidate file, relative to the workspace")};
  }
  ToolResult run(const nlohmann::json& args) override {
    std::string rel;
    Candidate c = load_from(ws_, args, rel);
    if (ctx_.evaluator == nullptr)
      return {fmt::format("evaluate is unavailable: {}. compile still works.", ctx_.no_gpu_reason),
              true,
              {{"unavailable", ctx_.no_gpu_reason}}};
    EvalReport rep;
    try {
      rep = ctx_.evaluator->evaluate(ctx_.op, c);
    } catch (const InputError& e) {
      return {fmt::format("plan error: {}", e.what()), true, {{"error", e.what()}}};
    }
    ctx_.last_report[rel] = rep;
    if (ctx_.on_evaluated) ctx_.on_evaluated(rel, c.source, rep);
    return {render_report(rep), rep.reward.tier < 0, report_json(rep)};
  }

 private:
  const Workspace& ws_;
  KernelToolContext& ctx_;
};

// Theoretical occupancy on Hopper-class SMs from a launch's block, registers and shared memory.
struct Occupancy {
  int blocks_per_sm = 0;
  double fraction = 0;
  std::string limiter;
};

Occupancy occupancy(int64_t threads, int regs, int64_t smem) {
  constexpr int kMaxThreads = 2048, kMaxBlocks = 32, kRegs = 65536;
  constexpr int64_t kSmem = 228 * 1024, kReservedPerBlock = 1024;
  const int warps = static_cast<int>((threads + 31) / 32);
  const int regs_per_warp = ((std::max(regs, 1) * 32 + 255) / 256) * 256;  // allocated per warp, 256 at a time
  struct Limit {
    int blocks;
    const char* why;
  };
  std::vector<Limit> limits = {
      {kMaxThreads / std::max<int>(warps * 32, 1), "threads"},
      {kMaxBlocks, "blocks per SM"},
      {kRegs / std::max(regs_per_warp * warps, 1), "registers"},
      {static_cast<int>(kSmem / std::max<int64_t>(smem + kReservedPerBlock, 1)), "shared memory"}};
  auto lim = *std::min_element(limits.begin(), limits.end(),
                               [](const Limit& a, const Limit& b) { return a.blocks < b.blocks; });
  Occupancy o;
  o.blocks_per_sm = std::max(lim.blocks, 0);
  o.fraction = std::min(1.0, static_cast<double>(o.blocks_per_sm * warps * 32) / kMaxThreads);
  o.limiter = lim.why;
  return o;
}

class ProfileTool : public Tool {
 public:
  ProfileTool(const Workspace& ws, KernelToolContext& ctx) : ws_(ws), ctx_(ctx) {}
  llm::ToolSpec spec() const override {
    return {"profile",
            "Profile a candidate (one evaluation): per launch of its plan the grid, block, registers, shared memory, "
            "theoretical occupancy (and what limits it) and its own time; for the whole plan the median time, "
            "achieved DRAM bandwidth against the GPU's peak and the memory floor.",
            path_schema("the candidate file, relative to the workspace")};
  }
  ToolResult run(const nlohmann::json& args) override {
    std::string rel;
    Candidate c = load_from(ws_, args, rel);
    CompileResult r;
    try {
      r = compile_checked(c, &ctx_.op, *ctx_.compiler, ctx_.arch);
    } catch (const InputError& e) {
      return {fmt::format("plan error: {}", e.what()), true, {{"error", e.what()}}};
    }
    if (!r.ok) return {compile_text(r), true, {{"ok", false}}};
    ShapeLookup shapes = [&](std::string_view name) -> const std::vector<int64_t>* {
      for (const auto* list : {&ctx_.op.inputs, &ctx_.op.outputs})
        for (const auto& t : *list)
          if (t.name == name) return &t.shape;
      return nullptr;
    };
    ScalarLookup scalars = [&](std::string_view name) -> std::optional<ExprValue> {
      for (const auto& s : ctx_.op.scalars)
        if (s.name == name) return s.value;
      return std::nullopt;
    };
    // Time it first (every launch on its own too), so the table can say where the time goes.
    std::optional<EvalReport> rep;
    if (ctx_.evaluator != nullptr) {
      try {
        rep = ctx_.evaluator->evaluate(ctx_.op, c, /*per_launch=*/true);
        ctx_.last_report[rel] = *rep;
        if (ctx_.on_evaluated) ctx_.on_evaluated(rel, c.source, *rep);
      } catch (const InputError& e) {
        return {fmt::format("plan error: {}", e.what()), true, {{"error", e.what()}}};
      }
    }
    const std::vector<LaunchTime> none;
    const auto& times = rep ? rep->outcome.launch_times : none;
    TextTable t({"launch", "kernel", "grid", "block", "regs", "smem B", "blocks/SM", "occupancy", "limited by",
                 "median ms", "CUPTI ms", "share"});
    nlohmann::json launches = nlohmann::json::array();
    for (size_t i = 0; i < c.plan.launches.size(); ++i) {
      const Launch& l = c.plan.launches[i];
      auto dims = [&](const std::vector<Expr>& es) {
        std::vector<int64_t> v;
        for (const auto& e : es) {
          try {
            v.push_back(e.eval_int(shapes, scalars));
          } catch (const ExprError&) {
            v.push_back(-1);  // depends on a scratch buffer's shape or is not known here
          }
        }
        return v;
      };
      auto grid = dims(l.grid), block = dims(l.block);
      int64_t threads = 1;
      for (int64_t b : block) threads *= std::max<int64_t>(b, 1);
      int64_t dyn = 0;
      try {
        dyn = l.smem.eval_int(shapes, scalars);
      } catch (const ExprError&) {
      }
      auto k =
          std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == l.kernel; });
      const int regs = k != r.kernels.end() ? k->registers : 0;
      const int64_t smem = (k != r.kernels.end() ? k->static_smem : 0) + dyn;
      Occupancy o = occupancy(threads, regs, smem);
      auto show = [](const std::vector<int64_t>& v) {
        std::string s;
        for (int64_t x : v) s += (s.empty() ? "" : "x") + (x < 0 ? std::string("?") : std::to_string(x));
        return s;
      };
      const bool timed = i < times.size();
      t.add_row({std::to_string(i), l.kernel, show(grid), show(block), std::to_string(regs), std::to_string(smem),
                 std::to_string(o.blocks_per_sm), fmt::format("{:.0f}%", 100 * o.fraction), o.limiter,
                 timed ? fmt::format("{:.4f}", times[i].median_ms) : "-",
                 timed && times[i].cupti_ms >= 0 ? fmt::format("{:.4f}", times[i].cupti_ms) : "-",
                 timed ? fmt::format("{:.0f}%", 100 * times[i].share) : "-"});
      launches.push_back({{"kernel", l.kernel},
                          {"grid", grid},
                          {"block", block},
                          {"registers", regs},
                          {"smem", smem},
                          {"blocks_per_sm", o.blocks_per_sm},
                          {"occupancy", o.fraction},
                          {"limited_by", o.limiter}});
      if (timed) launches.back()["median_ms"] = times[i].median_ms;
      if (timed && times[i].cupti_ms >= 0) launches.back()["cupti_ms"] = times[i].cupti_ms;
    }
    std::string text =
        "launches (theoretical occupancy on a 2048-thread, 64K-register, 228 KiB SM; each launch timed "
        "on its own after an L2 flush: median ms by events around it, CUPTI ms the kernel's own duration):\n" +
        t.render();
    nlohmann::json record = {{"launches", launches}};
    if (rep && rep->outcome.candidate_time) {
      const auto& o = rep->outcome;
      text += fmt::format(
          "\nwhole plan: median {:.4f} ms over {} samples; {} bytes of tensors moved: {:.0f} GB/s achieved, "
          "{:.1f}% of the {:.0f} GB/s peak; memory floor {:.4f} ms ({:.0f}% of the median). tier {}\n",
          o.candidate_time->median_ms, o.candidate_time->n, o.bytes_moved, o.achieved_gbs, 100 * o.bandwidth_share,
          o.device.peak_gbs, o.memory_floor_ms,
          o.candidate_time->median_ms > 0 ? 100 * o.memory_floor_ms / o.candidate_time->median_ms : 0.0,
          rep->reward.tier);
      record["median_ms"] = o.candidate_time->median_ms;
      record["achieved_gbs"] = o.achieved_gbs;
      record["bandwidth_share"] = o.bandwidth_share;
      record["tier"] = rep->reward.tier;
    } else if (ctx_.evaluator == nullptr) {
      text += fmt::format("\nno timing: {}\n", ctx_.no_gpu_reason);
    } else if (rep) {
      text += fmt::format("\nno timing: the candidate is not correct ({})\n", rep->outcome.message);
    }
    return {text, false, record};
  }

 private:
  const Workspace& ws_;
  KernelToolContext& ctx_;
};

class FinishTool : public Tool {
 public:
  FinishTool(const Workspace& ws, KernelToolContext& ctx) : ws_(ws), ctx_(ctx) {}
  llm::ToolSpec spec() const override {
    return {"finish",
            "End the run, naming the final candidate (normally your best evaluated one) and summarizing what it does.",
            {{"type", "object"},
             {"properties",
              {{"path", {{"type", "string"}, {"description", "the final candidate file"}}},
               {"summary", {{"type", "string"}, {"description", "what the kernel does and why it is fast"}}}}},
             {"required", {"path"}},
             {"additionalProperties", false}}};
  }
  ToolResult run(const nlohmann::json& args) override {
    std::string rel;
    load_from(ws_, args, rel);  // it must exist and parse
    ctx_.finished_path = rel;
    ctx_.finish_summary =
        args.contains("summary") && args["summary"].is_string() ? args["summary"].get<std::string>() : "";
    return {fmt::format("finished with {}", rel), false, {{"path", rel}, {"summary", ctx_.finish_summary}}};
  }

 private:
  const Workspace& ws_;
  KernelToolContext& ctx_;
};

}  // namespace

ToolSet make_kernel_tools(const Workspace& ws, KernelToolContext& ctx) {
  ToolSet out;
  out.push_back(std::make_unique<CompileTool>(ws, ctx));
  out.push_back(std::make_unique<EvaluateTool>(ws, ctx));
  out.push_back(std::make_unique<ProfileTool>(ws, ctx));
  out.push_back(std::make_unique<FinishTool>(ws, ctx));
  return out;
}

}  // namespace kagent::tools
