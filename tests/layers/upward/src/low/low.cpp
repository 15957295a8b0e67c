// A low concern that includes a high one: check_layers.cmake must refuse it.
#include "kagent/high/high.hpp"
#include "kagent/low/low.hpp"
