#pragma once
#include "kagent/low/low.hpp"
