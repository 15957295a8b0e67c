#include "kagent/model_tools/kernel_tools.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/compile/kernel_info.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/compile/sass.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/eval/profile_table.hpp"

namespace kagent::model_tools {

namespace {

nlohmann::json path_schema(const std::string& what) {
  return {{"type", "object"},
          {"properties", {{"path", {{"type", "string"}, {"description", what}}}}},
          {"required", {"path"}},
          {"additionalProperties", false}};
}

nlohmann::json compile_schema() {
  nlohmann::json s = path_schema("the candidate file, relative to the workspace");
  s["properties"]["sass"] = {
      {"type", "string"},
      {"enum", {"summary", "listing"}},
      {"description",
       "summary: per kernel, the instruction count, local-memory loads/stores (LDL/STL: register spills or a "
       "local array) and the most frequent opcodes; listing: also the SASS with source line numbers (up to 400 "
       "lines a kernel)"}};
  s["properties"]["kernel"] = {{"type", "string"}, {"description", "with sass: only this kernel"}};
  return s;
}

// The SASS section of a compile result; why there is none when the disassembler is missing or fails
// (the compile itself succeeded, so this is not an error of the candidate).
std::string sass_text(const CompileResult& r, bool listing, const std::string& kernel) {
  try {
    return render_sass(disassemble(r.cubin, find_cuda_paths()), listing, kernel);
  } catch (const std::exception& e) {
    return fmt::format("no SASS: {}\n", e.what());
  }
}

// The candidate at a workspace path, parsed; the model's mistakes (no file, bad plan) as ToolError.
Candidate load_from(const Workspace& ws, const KernelToolContext& ctx, const nlohmann::json& args, std::string& rel) {
  rel = arg_string(args, "path");
  auto abs = ws.resolve(rel);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(abs, ec)) throw ToolError(fmt::format("no file '{}' in the workspace", rel));
  Candidate c;
  try {
    c = parse_candidate(read_text_file(abs), rel);
  } catch (const InputError& e) {
    throw ToolError(e.what());
  }
  if (!ctx.kind.empty() && c.kind != ctx.kind) {
    std::string ext;
    for (const std::string& e : kind_named(ctx.kind, "kind").extensions()) ext += (ext.empty() ? "" : " or ") + e;
    throw ToolError(fmt::format("'{}' is a {} candidate; this episode takes {} candidates only ({} files)", rel, c.kind,
                                ctx.kind, ext));
  }
  return c;
}

std::string compile_text(const CompileResult& r) {
  if (!r.ok) return fmt::format("compile FAILED ({}):\n{}", r.arch, r.log);
  std::string out = fmt::format("compiled for {} in {:.2f} s{}\n{}", r.arch, r.seconds, r.cache_hit ? " (cached)" : "",
                                render_kernel_table(r.kernels));
  if (!r.log.empty() && r.log.find("warning") != std::string::npos) out += "\ncompiler warnings:\n" + r.log;
  if (!r.plan_checks.empty()) out += "\n" + r.plan_checks + "\n";
  return out;
}

class CompileTool : public Tool {
 public:
  CompileTool(const Workspace& ws, KernelToolContext& ctx) : ws_(ws), ctx_(ctx) {}
  llm::ToolSpec spec() const override {
    return {"compile",
            "Compile a candidate .cu file of the workspace with NVRTC for the target GPU and check its launch plan "
            "against the operator's tensors and the kernels' parameters. Returns the per-kernel resource table "
            "(registers, shared memory, stack, spills, max threads per block) or the errors with line numbers. "
            "With sass, also what the code became (the SASS, by nvdisasm).",
            compile_schema()};
  }
  ToolResult run(const nlohmann::json& args) override {
    std::string rel;
    Candidate c = load_from(ws_, ctx_, args, rel);
    const std::string sass = args.contains("sass") ? arg_string(args, "sass") : "";
    if (!sass.empty() && sass != "summary" && sass != "listing")
      throw ToolError(fmt::format("sass is 'summary' or 'listing', not '{}'", sass));
    const std::string kernel = args.contains("kernel") ? arg_string(args, "kernel") : "";
    try {
      CompileResult r = kind_of(c).compile(c, &ctx_.op, *ctx_.compiler, ctx_.arch);
      std::string text = compile_text(r);
      if (r.ok && !sass.empty()) {
        text += "\n";
        text += sass_text(r, sass == "listing", kernel);
      }
      return {text, !r.ok, {{"ok", r.ok}, {"kernels", r.kernels}, {"log", r.log}}};
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
    Candidate c = load_from(ws_, ctx_, args, rel);
    if (!ctx_.evaluate)
      return {fmt::format("evaluate is unavailable: {}. compile still works.", ctx_.no_gpu_reason),
              true,
              {{"unavailable", ctx_.no_gpu_reason}}};
    EvalReport rep;
    try {
      rep = ctx_.evaluate(c, EvalMode::score, deadline());
    } catch (const InputError& e) {
      return {fmt::format("plan error: {}", e.what()), true, {{"error", e.what()}}};
    }
    ctx_.last_report[rel] = rep;
    if (ctx_.on_evaluated) ctx_.on_evaluated(rel, c.source, rep);
    return {render_report(rep), rep.reward.tier < 0, report_json(rep), false, rep.reward.tier};
  }

 private:
  const Workspace& ws_;
  KernelToolContext& ctx_;
};

class ProfileTool : public Tool {
 public:
  ProfileTool(const Workspace& ws, KernelToolContext& ctx) : ws_(ws), ctx_(ctx) {}
  llm::ToolSpec spec() const override {
    return {"profile",
            "Profile a candidate (one evaluation): one line per launch of its plan with grid, block, registers, "
            "shared memory, occupancy (theoretical and achieved), its own time, hardware counters (DRAM and SM "
            "throughput, L2/L1 hit rates, tensor pipe) and its place on this GPU's measured roofline; a header "
            "with the median and the ideal time of the operator's bytes; a verdict naming what bounds it.",
            path_schema("the candidate file, relative to the workspace")};
  }
  ToolResult run(const nlohmann::json& args) override {
    std::string rel;
    Candidate c = load_from(ws_, ctx_, args, rel);
    CompileResult r;
    try {
      r = kind_of(c).compile(c, &ctx_.op, *ctx_.compiler, ctx_.arch);
    } catch (const InputError& e) {
      return {fmt::format("plan error: {}", e.what()), true, {{"error", e.what()}}};
    }
    if (!r.ok) return {compile_text(r), true, {{"ok", false}}};
    // Time it first (every launch on its own too), so the table can say where the time goes.
    std::optional<EvalReport> rep;
    if (ctx_.evaluate) {
      try {
        rep = ctx_.evaluate(c, EvalMode::profile, deadline());
        ctx_.last_report[rel] = *rep;
        if (ctx_.on_evaluated) ctx_.on_evaluated(rel, c.source, *rep);
      } catch (const InputError& e) {
        return {fmt::format("plan error: {}", e.what()), true, {{"error", e.what()}}};
      }
    }
    auto out = profile::render_profile(ctx_.op, c, r, rep ? &*rep : nullptr, ctx_.no_gpu_reason);
    // The record carries a tier when the candidate was timed (render_profile); so does the result.
    std::optional<int> tier;
    if (out.record.contains("tier")) tier = out.record["tier"].get<int>();
    return {out.compact, false, out.record, false, tier};
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
    load_from(ws_, ctx_, args, rel);  // it must exist and parse
    ctx_.finished_path = rel;
    ctx_.finish_summary =
        args.contains("summary") && args["summary"].is_string() ? args["summary"].get<std::string>() : "";
    return {fmt::format("finished with {}", rel), false, {{"path", rel}, {"summary", ctx_.finish_summary}}, true};
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

}  // namespace kagent::model_tools
