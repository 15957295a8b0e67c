"""The reference's floating-point operations for the compute floor kagent states beside the memory
floor: one forward call under PyTorch's FlopCounterMode (torch.utils.flop_counter), which counts
matrix products, convolutions and attention (2 per multiply-add) and nothing elementwise. torch is
passed in, so the logic runs in tests without it."""

import importlib


def count(torch, run):
    """({"total": int, "by_op": {"aten.mm": int, ...}}, None), or (None, why) when nothing can be said.
    `run` makes one forward call; it runs under no_grad, as the reference always does."""
    try:
        flop_counter = getattr(torch.utils, "flop_counter", None)
        if flop_counter is None:  # `import torch` does not import this submodule
            flop_counter = importlib.import_module(torch.__name__ + ".utils.flop_counter")
        mode = flop_counter.FlopCounterMode(display=False)
    except (AttributeError, ImportError, TypeError) as e:  # a torch before FlopCounterMode (2.1)
        return None, f"this torch has no usable FlopCounterMode ({type(e).__name__}: {e})"
    try:
        with torch.no_grad(), mode:
            run()
        total = int(mode.get_total_flops())
        by_op = {str(op): int(n) for op, n in mode.get_flop_counts().get("Global", {}).items() if n}
    except Exception as e:  # the count is a hint for the prompt; a model it cannot follow still runs
        first = str(e).splitlines()[0] if str(e) else ""
        return None, f"FlopCounterMode failed on the reference ({type(e).__name__}: {first})"
    if total <= 0:
        return None, ("FlopCounterMode counted no matrix product, convolution or attention in the reference "
                      "(it does not count elementwise work)")
    return {"total": total, "by_op": dict(sorted(by_op.items(), key=lambda kv: -kv[1]))}, None
