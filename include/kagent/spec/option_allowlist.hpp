#pragma once
// NVRTC options a candidate may add to its plan: an allowlist of option names that read and
// write no file (code generation, warnings, macros). Everything else is refused, including every
// option that names a file or directory (--pre-include, -include, -I, --include-path, --time,
// --fdevice-time-trace, the precompiled-header family) and those the harness sets itself
// (--gpu-architecture) or that let device code launch grids (-rdc, -dc, -dlto).
#include <string>

namespace kagent {

// Throws InputError "<where>: option '<option>' is refused: ..." naming why.
void check_option_allowed(const std::string& option, const std::string& where);

}  // namespace kagent
