#pragma once
// How a compile result is shown: the per-kernel resource table for people, JSON for machines.
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/compile/compiler.hpp"

namespace kagent::cli {

std::string render_kernel_table(const CompileResult& r);
nlohmann::json compile_json(const std::string& path, const CompileResult& r);

}  // namespace kagent::cli
