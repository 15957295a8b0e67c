#pragma once
// Parsing a library step of the plan's `launch` list ({"gemm": {...}} or {"conv": {...}}); private
// to src/spec. Errors name the plan key ("launch[2].gemm.m") as every plan error does.
#include <string>

#include "kagent/spec/candidate.hpp"
#include "plan_json.hpp"

namespace kagent::spec_detail {

// `v` is the launch entry (an object with exactly one key, gemm or conv); `key` is "launch[i]".
Launch parse_library_step(const PlanJson& in, const PlanJsonValue& v, const std::string& key);

}  // namespace kagent::spec_detail
