#pragma once
// The hardware counters kagent reads for each kernel of a plan, by their Nsight Compute names, and
// what they become (KernelMetrics). The runner asks CUPTI's range profiler for exactly this list;
// check_counters_on_chip lets a machine without a GPU (CI) confirm that CUPTI's host side knows
// every name on the chips kagent supports, so a renamed metric fails a test, not a user's profile.
#include <string>
#include <vector>

#include "kagent/protocol/protocol.hpp"

namespace kagent::profile {

const std::vector<std::string>& counter_metrics();

// `values` in the order of counter_metrics(), as CUPTI evaluated them for one kernel.
KernelMetrics kernel_metrics(const std::string& kernel, const std::vector<double>& values);

// "" when CUPTI's profiler host API accepts every metric for `chip` ("GH100", "GA100", ...),
// else the first refusal ("GH100: dram__bytes.sum: CUPTI_ERROR_INVALID_METRIC_NAME"). Needs
// libcupti, not a GPU. Throws std::runtime_error when libcupti cannot be loaded or the profiler
// cannot run in this build (counters_unavailable_in_this_build).
std::string check_counters_on_chip(const std::string& chip, const std::vector<std::string>& metrics);

}  // namespace kagent::profile
