#pragma once
// The default run folder's name comes from the op's "name", which is text in a problem file:
// it becomes one safe path component, never a path (no '/', no "..", no leading '.').
#include <string>
#include <string_view>

namespace kagent::agent {

// Letters, digits, '-', '_' and a '.' after a letter or digit kept; every other byte becomes '_';
// runs of '_' collapse; at most 80 bytes; "op" when nothing is left.
std::string run_folder_name(std::string_view op_name);

}  // namespace kagent::agent
