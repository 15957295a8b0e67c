#pragma once
// Natural order for problem names: "level1/2_x" before "level1/10_y", as people number them.
#include <string_view>

namespace kagent {

// Digit runs compare as numbers (of any length), everything else byte by byte.
bool natural_less(std::string_view a, std::string_view b);

}  // namespace kagent
