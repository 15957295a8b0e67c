// PyTorch's operators in a ModelNew solution's profiled samples under the policy
// (kagent/eval/torch_ops_rule.hpp).
#include "kagent/eval/torch_ops_rule.hpp"

#include <fmt/format.h>

namespace kagent {

namespace {

std::string percent_of(double us, const CuptiCheck& c) {
  return c.kernel_ms > 0 ? fmt::format("{:.1f}%", 100.0 * us / 1e3 / c.kernel_ms) : std::string("?%");
}

}  // namespace

std::string judge_torch_ops(const nlohmann::json& t, const CuptiCheck& c, TorchOps policy, EvalOutcome& o) {
  const double share = t.value("torch_share", 0.0);
  const int custom = t.value("custom_kernels", 0);
  std::string ops, computing;
  double computing_us = 0;
  if (auto it = t.find("torch_ops"); it != t.end() && it->is_object()) {
    for (auto op = it->begin(); op != it->end(); ++op) {
      const double us = op.value().is_number() ? op.value().get<double>() : 0.0;
      const std::string one = fmt::format("{} {}", op.key(), percent_of(us, c));
      ops += (ops.empty() ? "" : ", ") + one;
      if (!torch_op_only_allocates(op.key())) {
        computing += (computing.empty() ? "" : ", ") + one;
        computing_us += us;
      }
    }
  }
  const bool none_of_its_own = custom == 0 && c.launches_seen > 0;
  const std::string what = fmt::format(
      "{:.0f}% of the kernel time is PyTorch's own operators ({}); the solution's own kernels ran {} time(s)",
      100 * share, ops.empty() ? "none" : ops, custom);
  if (policy == TorchOps::fail && (!computing.empty() || none_of_its_own)) {
    o.flags.push_back({FlagKind::torch_ops, "", share, 0, what + " (--torch-ops fail)"});
    if (!computing.empty())
      return fmt::format(
          "PyTorch's operators computed part of the work ({} of the kernel time: {}); under --torch-ops fail the "
          "solution's own kernels must do all of it (PyTorch may only allocate memory and fill it with a constant)",
          percent_of(computing_us, c), computing);
    return fmt::format(
        "no kernel of the solution's own ran ({}); under --torch-ops fail its own kernels must do the "
        "work",
        what);
  }
  if (ops.empty() && !none_of_its_own) return "";
  const bool mostly_torch = share > kTorchShareLimit || none_of_its_own;
  if (mostly_torch && policy == TorchOps::cap)
    o.flags.push_back(
        {FlagKind::torch_ops, "", share, kTorchShareLimit, what + " (--torch-ops allow permits it; fail fails it)"});
  else
    o.flags.push_back({FlagKind::note, "", share, kTorchShareLimit, "PyTorch ops ran: " + what});
  return "";
}

}  // namespace kagent
