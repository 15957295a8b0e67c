// --atol, --rtol, --tolerance: one declaration for every command that scores a candidate; and what
// an --op may name.
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/serve/problem_path.hpp"
#include "kagent/serve/request.hpp"

namespace kagent::cli {

namespace fs = std::filesystem;

CLI::Validator op_path() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        // A file, or an op's folder (load_op reads its op.json and says when it has none).
        std::error_code ec;
        if (fs::is_regular_file(value, ec) || fs::is_directory(value, ec)) return {};
        // A KernelBench id (level1/19, level1/19_ReLU) under $KAGENT_KERNELBENCH_DIR, as kagent serve
        // takes them under its problems root.
        const char* kb = std::getenv("KAGENT_KERNELBENCH_DIR");
        const bool id_like = value.rfind("level", 0) == 0 && value.find('/') != std::string::npos;
        if (id_like && kb != nullptr && *kb != '\0') {
          try {
            value = serve::resolve_problem(kb, value, "").string();
            return {};
          } catch (const serve::RequestError& e) {
            if (e.status() == 404)
              return fmt::format("no KernelBench problem {} under KAGENT_KERNELBENCH_DIR={}", value, kb);
            return fmt::format("{} (KernelBench under KAGENT_KERNELBENCH_DIR={})", e.what(), kb);
          }
        }
        return fmt::format("File does not exist: {}{}", value,
                           id_like ? " (a KernelBench id like level1/19 needs KAGENT_KERNELBENCH_DIR set to the "
                                     "folder holding level1, level2, level3)"
                                   : "");
      },
      "PATH|FOLDER|levelN/ID");
}

void add_op_flags(CLI::App* sub, OpOverrides* o) {
  auto* atol = sub->add_option_function<double>(
      "--atol", [o](double v) { o->atol = v; }, "Absolute tolerance (default: the op's; fp32 1e-4)");
  auto* rtol = sub->add_option_function<double>(
      "--rtol", [o](double v) { o->rtol = v; }, "Relative tolerance (default: the op's; fp32 1e-4)");
  auto* both = sub->add_option_function<double>(
      "--tolerance",
      [o](double v) {
        o->atol = v;
        o->rtol = v;
      },
      "atol and rtol at once (the CUDA Agent paper scored with 1e-2)");
  both->excludes(atol)->excludes(rtol);
}

}  // namespace kagent::cli
