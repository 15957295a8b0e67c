// kagent serve's request bodies (serve/request.hpp) as a client may send them: single and batch
// parsing, then each problem name resolved under a problems root. Refusals are RequestError
// (an InputError); anything else escaping is a finding.
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_util.hpp"
#include "kagent/common/error.hpp"
#include "kagent/serve/problem_path.hpp"
#include "kagent/serve/request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A problems root with one KernelBench problem, so that ids and paths resolve or are refused.
  static const std::filesystem::path root = [] {
    auto r = std::filesystem::temp_directory_path() / ("kagent-fuzz-serve-" + std::to_string(::getpid()));
    std::filesystem::create_directories(r / "level1");
    std::ofstream(r / "level1" / "19_ReLU.py") << "# problem\n";
    return r;
  }();
  kagent::serve::RequestLimits limits;
  limits.max_body_bytes = 1 << 16;
  limits.max_source_bytes = 1 << 12;
  limits.max_batch = 8;
  const auto text = kagent::fuzz::text_of(data, size);
  try {
    auto r = kagent::serve::parse_evaluate_request(text, limits);
    kagent::serve::resolve_problem(root, r.problem);
  } catch (const kagent::InputError&) {
  }
  try {
    for (const auto& r : kagent::serve::parse_batch_request(text, limits))
      kagent::serve::resolve_problem(root, r.problem);
  } catch (const kagent::InputError&) {
  }
  return 0;
}
