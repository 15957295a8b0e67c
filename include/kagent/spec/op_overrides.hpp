#pragma once
// Settings the command line lays over an operator's own (op.json, or a KernelBench .py's
// defaults): `--atol`, `--rtol`, `--tolerance` on eval, profile, optimize, bench and check, so a
// KernelBench problem can be scored under another protocol without writing an op.json.
#include <optional>
#include <string>
#include <vector>

#include "kagent/spec/op.hpp"

namespace kagent {

struct OpOverrides {
  std::optional<double> atol, rtol;

  bool empty() const { return !atol && !rtol; }
  // Throws InputError (exit 2) for a negative, NaN or infinite tolerance, naming the flag.
  void validate() const;
  // The op with these settings in place of its own.
  void apply(Op& op) const;
  // The flags that give these settings to a child kagent (bench --agent's `kagent optimize`),
  // written so the child reads back exactly the same doubles.
  std::vector<std::string> to_args() const;
};

}  // namespace kagent
