#pragma once
// What correctness is judged under besides the precision: |out - ref| <= atol + rtol * |ref|
// (protocol/compare_rule.hpp). Low in the layering because every record of a result keeps it
// (score.hpp), and the op (spec), the runner's messages (protocol) and the reports all name it:
// one JSON form, {"atol": A, "rtol": R}, and one text, "atol A, rtol R", for all of them.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kagent {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
  auto operator<=>(const Tolerance&) const = default;
};

// {"atol": A, "rtol": R}. Reading needs both numbers (nlohmann's type_error or out_of_range
// otherwise): the runner's messages and the op's own settings.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Tolerance, atol, rtol)

// A recorded tolerance (result files, run folders): an object with both numbers, else nullopt
// (records written before the tolerance was recorded, or by hand).
std::optional<Tolerance> recorded_tolerance(const nlohmann::json& j);

// "atol 0.0001, rtol 0.0001": how results, reports and prompts name a tolerance.
std::string tolerance_text(const Tolerance& t);

}  // namespace kagent
