#pragma once
// How a compile result is shown: the per-kernel resource table for people, JSON for machines.
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/compile/compiler.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::cli {

// Compiles a candidate (or native reference) and checks its plan: tensor names against the op
// (native references; op may be null) and launches against the compiled kernels' parameters.
// A compile error is a result with ok=false; plan problems throw InputError.
CompileResult compile_checked(const Candidate& cand, const Op* op, const Compiler& compiler, const std::string& arch);

std::string render_kernel_table(const CompileResult& r);
nlohmann::json compile_json(const std::string& path, const CompileResult& r);

}  // namespace kagent::cli
