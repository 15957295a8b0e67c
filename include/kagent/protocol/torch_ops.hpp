#pragma once
// What a ModelNew solution earns when PyTorch's own operators do its work (docs/references.md):
// a policy chosen per evaluation (`--torch-ops`, a request's "measure": {"torch_ops"}).
//
//   fail   any PyTorch operator that computes (not one that only allocates or fills memory) ran a
//          kernel during the solution's call, or no kernel of the solution's own ran: incorrect for
//          the reward (stage torch_ops, tier -1, the operators named). The RL default: `kagent serve`
//          and the training preset.
//   cap    PyTorch's operators carried most of the kernel time, or no kernel of its own ran: correct
//          at most tier 1 (the torch_ops flag withholds the speed tiers). The CLI's default.
//   allow  speed scores whatever ran; the record still lists PyTorch's operators.
#include <optional>
#include <string_view>

namespace kagent {

enum class TorchOps { fail, cap, allow };

std::string_view torch_ops_name(TorchOps p);
std::optional<TorchOps> parse_torch_ops(std::string_view name);
inline constexpr std::string_view kTorchOpsChoices = "fail, cap, allow";

// Whether a PyTorch operator (its name as the profiler records the outermost one around a launch,
// "aten::zeros") only allocates memory or fills it with a constant: torch.empty, zeros, ones, full,
// fill_, zero_ and their _like and new_ forms. Views launch no kernel. Everything else that
// launches one computes: arithmetic, reductions, matmul and convolution, and copies too
// (contiguous, clone, copy_, cat), since moving data is the work of some operators.
bool torch_op_only_allocates(std::string_view op);

}  // namespace kagent
