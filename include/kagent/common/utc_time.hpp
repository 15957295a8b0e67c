#pragma once
#include <string>

namespace kagent {

// The current time as ISO 8601 in UTC ("2026-11-29T20:41:07Z"): when a measurement that other
// machines read (device peaks, shared baselines) was taken.
std::string utc_timestamp();

}  // namespace kagent
