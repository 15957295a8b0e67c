#include "kagent/high/high.hpp"
#include "kagent/low/low.hpp"
