#pragma once
// The candidate, and the format of the plan kind: one .cu file of device code with a JSON launch
// plan in a /*kagent ... */ block (docs/candidate.md), compiled by NVRTC and run by kagent-runner.
// Parsing checks everything that can be checked without the operator and the compiled code;
// plan_check.hpp checks the rest.
// A candidate is of one kind (Candidate::kind). Which kinds there are, which files are of which
// kind, and how each is parsed, built and run are the kinds' own (eval/candidate_kind.hpp, the
// list in src/eval/candidate_kinds.cpp); this layer knows the plan format only, which kagent-runner
// also reads.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "kagent/spec/dtype.hpp"
#include "kagent/spec/expr.hpp"
#include "kagent/spec/library_step.hpp"

namespace kagent {

enum class ScalarType { i32, i64, u32, f32, f64 };
std::string_view scalar_type_name(ScalarType t);
size_t scalar_type_size(ScalarType t);

struct PlanArg {
  bool is_tensor = true;
  std::string tensor;                        // when is_tensor: the tensor's name
  ScalarType scalar_type = ScalarType::i32;  // otherwise: "type:expression"
  Expr value;
  std::string text;  // the argument as written in the plan
  size_t size_bytes() const { return is_tensor ? 8 : scalar_type_size(scalar_type); }
};

// One entry of the plan's `launch` list: a kernel launch (kind kernel: kernel, grid, block, smem,
// args) or a library step (kind gemm or conv: library_step.hpp), run in order on one stream.
struct Launch {
  StepKind kind = StepKind::kernel;
  GemmStep gemm;  // kind gemm
  ConvStep conv;  // kind conv
  std::string kernel;
  std::vector<Expr> grid;   // 1 to 3
  std::vector<Expr> block;  // 1 to 3
  Expr smem;                // dynamic shared memory in bytes (default 0)
  std::vector<PlanArg> args;
};

struct ScratchBuffer {
  std::string name;
  DType dtype = DType::f32;
  std::vector<Expr> shape;
};

struct LaunchPlan {
  std::vector<ScratchBuffer> scratch;
  std::vector<Launch> launches;
  std::vector<std::string> options;  // extra NVRTC options, already checked against the refused set
  // "graph": true: the runner captures the whole plan (kernels and library steps) into a CUDA graph
  // once per buffer set and replays it; correctness and timing are taken on the replay.
  bool graph = false;
};

// Candidate::kind of a plan candidate (the other kinds name themselves: eval/candidate_kind.hpp).
inline constexpr std::string_view kPlanKind = "plan";

struct Candidate {
  std::filesystem::path path;   // as given by the user; used as the NVRTC program name
  std::string source;           // the whole file, compiled verbatim so line numbers are the file's
  LaunchPlan plan;              // plan candidates only
  int plan_line = 0;            // 1-based line of "/*kagent" (plan) or where another kind's code starts
  std::string kind{kPlanKind};  // the name of its CandidateKind: "plan", "modelnew", ...
};

// The most bytes of JSON between /*kagent and */, and the most JSON values (objects, arrays,
// strings, numbers, ...) in them. The largest plan in examples/ (ResNet18, 80 library steps) is
// 12 KB and about 1000 values: a plan of some 5000 steps fits.
inline constexpr size_t kMaxPlanBytes = size_t{1} << 20;
inline constexpr size_t kMaxPlanValues = size_t{1} << 16;

// A plan candidate, whatever the file's name (parse_candidate and load_candidate of
// eval/candidate_kinds.hpp pick the kind by the name). Throws InputError naming path:line and the
// plan key (e.g. "launch[1].grid") on any problem: no or two plan blocks, unterminated block,
// malformed JSON (with the file's line), unknown keys, wrong types, bad expressions, bad dtypes,
// refused options, duplicate scratch names.
// Before it is parsed, the plan's text is bounded (kMaxPlanBytes) and so is what its JSON may
// allocate (kMaxPlanValues values, 64 levels deep): a 16 MB plan, which would take 50 times its
// size to parse, is refused at once.
Candidate parse_plan_candidate(std::string source, const std::filesystem::path& path);

// Candidate-supplied NVRTC options: throws InputError for options that would let device code
// launch grids (-rdc, -dc, -dlto and spellings) or that the harness controls (arch, include paths).
void check_candidate_option(const std::string& option, const std::string& where);

}  // namespace kagent
