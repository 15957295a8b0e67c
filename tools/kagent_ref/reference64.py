"""The reference computed in float64 (docs/measurement.md): correct relative to the truth, not to the
reference's rounding. A candidate whose element is within the tolerance of the fp64 result, or no
farther from it than the reference at the precision, passes (the runner's rule,
include/kagent/protocol/compare_rule.hpp). KernelBench's level2/18 shows why: a candidate that
simplifies the algebra and accumulates in fp64 was 1.65e-4 off the fp32 reference on 1 of 1024
elements (atol 1e-4), where the fp32 reference's own rounding is of that size.

The fp64 model is a deep copy of the model under test cast to float64, made once per load: the same
weights (already rounded to the precision), not drawn again. Each trial runs it on the trial's
inputs cast to float64, when that fits in the GPU's free memory with a margin; an op without fp64
support, or running out of memory, leaves the trial without it, and the reply says why (the runner
then applies the plain rule). For fp16/bf16 too: their references are the farthest from the truth.

A forward that draws random numbers (dropout, torch.randn for an LSTM's h0/c0) gets the reference's
own draws played back (draws.py), the values the candidate got as inputs: drawn again, the fp64
twin would compute another function.

Integer and bool outputs need no twin; float64 outputs are their own. torch is imported lazily so
the sizing rule can be tested without it.

A reference that is exact at its precision (ReLU, max, a copy or a permutation: no rounding
anywhere) has twins equal to its own outputs, and then the fp64 rule is the plain one: an element
within the tolerance of the twin is within it of the reference. When a trial's twins equal the
outputs element for element, and the outputs are large enough for the twin to cost time (EXACT_SKIP
elements and more), later trials make none and say why (EXACT_NOTE). Any difference, or a NaN, keeps
the twins coming.
"""

import copy

SUFFIX = "@f64"  # exported as e.g. "out@f64", "out0@f64"
MARGIN = 1.25  # intermediates of the fp64 forward, beyond its inputs and outputs
SPARE_BYTES = 1 << 30  # left free for the runner's own allocations during the trial
EXACT_SKIP = 1 << 20  # floating output elements from which an exact reference's twins are left out
EXACT_NOTE = ("the reference is exact at its precision: an earlier trial's outputs equalled their float64 twins "
              "element for element, where the fp64 rule adds nothing to the plain one")
_CHUNK = 1 << 26  # elements compared at a time, so that the check allocates little


def skips_twins(elements, equal):
    """Whether later trials leave the twins out: there are `elements` floating output elements,
    enough for a twin to cost time, and `equal()` (asked only then: it reads them all) says the
    outputs equalled their twins."""
    return elements >= EXACT_SKIP and bool(equal())


def fits(need_bytes, free_bytes):
    """Whether an fp64 forward needing about need_bytes (inputs and outputs in fp64) fits."""
    return need_bytes * MARGIN + SPARE_BYTES <= free_bytes


def _first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


class Reference64:
    def __init__(self, model, device):
        import torch

        self.device = device
        self.model = None
        self.note = None  # why there is no fp64 twin, for every trial
        self.exact = False  # a trial's twins equalled its outputs, and they are large: no more twins
        if device.type != "cuda":
            self.note = "no GPU"
            return
        params = sum(t.numel() * 8 for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point())
        free, _ = torch.cuda.mem_get_info(device)
        if not fits(params, free):
            self.note = f"the model in float64 ({params >> 20} MiB) does not fit in the GPU's free memory"
            return
        try:
            self.model = copy.deepcopy(model).to(torch.float64)
        except Exception as e:  # a module that cannot be copied or cast
            self.note = f"the model cannot be cast to float64 ({_first_line(e)})"

    def run(self, args, outs, names, draws=(), call=None):
        """(named fp64 outputs, note): [(name + SUFFIX, tensor)] for the floating outputs, run on
        `args` cast to float64 with the reference's own draws played back (draws.py: the values the
        candidate got, floating ones in float64); or ([], why). `call(model, args)` calls the model
        as the reference is called (forward_args.py's defaults)."""
        import torch

        from . import draws as draws_mod
        from .lower_precision import private_inputs

        if self.model is None:
            return [], self.note
        if self.exact:
            return [], EXACT_NOTE
        want = [i for i, o in enumerate(outs) if o.is_floating_point() and o.dtype != torch.float64]
        if not want:
            return [], None
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        in_bytes = sum(a.numel() * 8 for a in tensors)
        out_bytes = sum(o.numel() * 8 for o in outs)
        free, _ = torch.cuda.mem_get_info(self.device)
        if not fits(in_bytes + out_bytes, free):
            return [], (f"the fp64 inputs and outputs ({(in_bytes + out_bytes) >> 20} MiB) do not fit in the GPU's "
                        f"free memory ({free >> 20} MiB)")
        try:
            # Copies: the trial's own inputs are the candidate's, and forward may write its inputs in place.
            args64 = private_inputs(torch, args, torch.float64)
            with torch.no_grad():
                if draws:
                    replay = draws_mod.replay(torch, list(draws), torch.float64)
                    with replay:
                        out = call(self.model, args64) if call else self.model(*args64)
                    replay.done()
                else:
                    out = call(self.model, args64) if call else self.model(*args64)
            outs64 = list(out) if isinstance(out, (tuple, list)) else [out]
            del args64
        except torch.cuda.OutOfMemoryError as e:
            torch.cuda.empty_cache()
            return [], f"the fp64 forward ran out of GPU memory ({_first_line(e)})"
        except draws_mod.ReplayMismatch as e:
            return [], f"the fp64 forward drew otherwise than the reference ({e})"
        except Exception as e:  # an op without fp64 support
            return [], f"the fp64 forward failed ({_first_line(e)})"
        if len(outs64) != len(outs):
            return [], f"the fp64 forward returned {len(outs64)} outputs, the reference {len(outs)}"
        named = []
        for i in want:
            o64 = outs64[i]
            if not isinstance(o64, torch.Tensor) or o64.shape != outs[i].shape:
                return [], f"the fp64 forward's output {i} does not have the reference's shape"
            named.append((names[i] + SUFFIX, o64.to(torch.float64).contiguous()))
        elements = sum(outs[i].numel() for i in want)
        self.exact = skips_twins(elements, lambda: all(_equal(outs[i], t) for i, (_, t) in zip(want, named)))
        return named, None


def _equal(out, twin):
    """Whether out (at its precision) equals its fp64 twin element for element; False for any NaN."""
    import torch

    a, b = out.reshape(-1), twin.reshape(-1)
    for start in range(0, a.numel(), _CHUNK):
        if not torch.equal(a[start:start + _CHUNK].to(torch.float64), b[start:start + _CHUNK]):
            return False
    return True
