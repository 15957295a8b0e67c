#include "kagent/spec/option_allowlist.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

namespace {

// NVRTC's documented options (CUDA 13) that touch no file, in both spellings.
constexpr std::array<std::string_view, 62> kAllowed = {"--use_fast_math",
                                                       "-use_fast_math",
                                                       "--maxrregcount",
                                                       "-maxrregcount",
                                                       "--ftz",
                                                       "-ftz",
                                                       "--prec-sqrt",
                                                       "-prec-sqrt",
                                                       "--prec-div",
                                                       "-prec-div",
                                                       "--fmad",
                                                       "-fmad",
                                                       "--extra-device-vectorization",
                                                       "-extra-device-vectorization",
                                                       "--define-macro",
                                                       "--undefine-macro",
                                                       "--std",
                                                       "-std",
                                                       "--device-debug",
                                                       "-G",
                                                       "--generate-line-info",
                                                       "-lineinfo",
                                                       "--dopt",
                                                       "-dopt",
                                                       "--Ofast-compile",
                                                       "-Ofc",
                                                       "--restrict",
                                                       "-restrict",
                                                       "--device-as-default-execution-space",
                                                       "-default-device",
                                                       "--device-int128",
                                                       "-device-int128",
                                                       "--disable-warnings",
                                                       "-w",
                                                       "--diag-error",
                                                       "-diag-error",
                                                       "--diag-suppress",
                                                       "-diag-suppress",
                                                       "--diag-warn",
                                                       "-diag-warn",
                                                       "--no-display-error-number",
                                                       "-no-err-no",
                                                       "--display-error-number",
                                                       "-err-no",
                                                       "--builtin-move-forward",
                                                       "-builtin-move-forward",
                                                       "--builtin-initializer-list",
                                                       "-builtin-initializer-list",
                                                       "--optimization-info",
                                                       "-opt-info",
                                                       "--split-compile",
                                                       "-split-compile",
                                                       "--minimal",
                                                       "-minimal",
                                                       "--device-stack-protector",
                                                       "-device-stack-protector",
                                                       "--jump-table-density",
                                                       "-jtd",
                                                       "--Wreorder",
                                                       "-Wreorder",
                                                       "--Wno-deprecated-declarations",
                                                       "-Wno-deprecated-declarations"};

// ptxas options (inside --ptxas-options / -Xptxas) that touch no file.
constexpr std::array<std::string_view, 22> kAllowedPtxas = {"-v",
                                                            "--verbose",
                                                            "-O0",
                                                            "-O1",
                                                            "-O2",
                                                            "-O3",
                                                            "--opt-level",
                                                            "-O",
                                                            "--maxrregcount",
                                                            "-maxrregcount",
                                                            "--warn-on-spills",
                                                            "-warn-spills",
                                                            "--warn-on-local-memory-usage",
                                                            "-warn-lmem-usage",
                                                            "--warn-on-double-precision-use",
                                                            "-warn-double-usage",
                                                            "--allow-expensive-optimizations",
                                                            "-allow-expensive-optimizations",
                                                            "--def-load-cache",
                                                            "-dlcm",
                                                            "--def-store-cache",
                                                            "-dscm"};

constexpr std::array<std::string_view, 10> kDeviceLink = {
    "-rdc", "--relocatable-device-code", "-dc", "--device-c", "-dw", "--device-w", "-dlto", "--dlink-time-opt",
    "-ewp", "--extensible-whole-program"};

std::string_view name_of(std::string_view option) {
  return option.substr(0, option.find('='));
}

template <size_t N>
bool in(const std::array<std::string_view, N>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

void check_option_allowed(const std::string& option, const std::string& where) {
  auto refuse = [&](std::string_view why) {
    throw InputError(fmt::format("{}: option '{}' is refused: {}", where, option, why));
  };
  if (option.empty() || option[0] != '-') refuse("expected an NVRTC option starting with '-'");
  // One option per string: NVRTC must never see a second one hidden behind a space.
  if (option.find_first_of(" \t\n\r\v\f") != std::string::npos || option.find('\0') != std::string::npos)
    refuse("an option may not contain white space");
  std::string_view name = name_of(option);
  if (in(kDeviceLink, name))
    refuse("it would let device code launch grids (or link device code), which the harness cannot time");
  if (name == "-arch" || name == "--gpu-architecture") refuse("the GPU architecture is set by the harness");
  // -DNAME=value and -UNAME: the macro text names no file.
  if (option.size() > 2 && option[1] != '-' && (option[1] == 'D' || option[1] == 'U')) return;
  if (name == "--ptxas-options" || name == "-Xptxas") {
    std::string_view rest = std::string_view(option).substr(std::min(option.size(), name.size() + 1));
    if (rest.empty()) refuse("expected --ptxas-options=<ptxas option>");
    for (size_t start = 0; start <= rest.size();) {
      size_t comma = rest.find(',', start);
      std::string_view one =
          rest.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (!in(kAllowedPtxas, name_of(one)) && !(one.size() == 3 && one.starts_with("-O")))
        refuse(
            fmt::format("ptxas option '{}' is not one kagent allows (verbosity, optimization level, register "
                        "limit, warnings, cache defaults)",
                        one));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return;
  }
  if (name.starts_with("-I") || name == "--include-path" || name == "-isystem" || name == "--system-include")
    refuse("include paths are set by the harness (a candidate sees only the CUDA toolkit's headers)");
  if (!in(kAllowed, name))
    refuse(
        "not an option kagent allows; candidates may add code-generation, warning and macro options "
        "(--use_fast_math, --maxrregcount, --ftz, --prec-div, --prec-sqrt, --fmad, -D, -U, --std, -lineinfo, "
        "--ptxas-options, --diag-suppress, ...), never one that reads or writes a file");
}

}  // namespace kagent
