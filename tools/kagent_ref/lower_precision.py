"""The reference computed at the precisions a problem forbids, each against the fp64 reference: the
figures of kagent's precision rule (include/kagent/protocol/output_rules.hpp, docs/measurement.md).

An element-wise tolerance cannot see the precision a candidate computed at: rtol 1e-4 of outputs
around 700 is looser than TF32's rounding, and outputs around 6e-5 sit under atol whatever they are.
So the rule sets the candidate's relative L2 error against the fp64 reference beside the errors of
the reference itself and of the reference computed at each forbidden precision, measured here:

  fp32  forbids tf32 (the fp32 model and inputs, TF32 on for matmuls and cuDNN, and SDPA on its
        math backend, whose products take TF32 where its fused fp32 kernels ignore it), bf16 and
        fp16 (a copy of the model and the inputs cast to that type);
  tf32  forbids bf16 and fp16, and allows tf32: its reference runs SDPA's fused kernels, which
        skip TF32, so it also gets the tf32 figure above as "allowed", the error of a candidate
        that computes every operator at TF32, which the rule anchors on;
  fp16, bf16: nothing (their references are already the half-precision computation).

Measured once per load, on the first trial that has fp64 twins: the errors are properties of the
problem's arithmetic, not of one draw of inputs, and the half-precision copies are made and let go
at once. A precision whose forward fails, or that overflows (fp16 past 65504), has no figure, and
the note says why. The relative error is ||r_p - r64|| / ||r64||, the largest |r_p - r64| beside it.
"""

import contextlib
import copy

from . import numerics as numerics_mod

FORBIDDEN = {"fp32": ("tf32", "bf16", "fp16"), "tf32": ("bf16", "fp16"), "fp16": (), "bf16": ()}
ALLOWED = {"tf32": ("tf32",)}
_CHUNK = 1 << 26  # elements compared at a time, so that the figures allocate little


def forbidden(precision):
    """The precisions a problem evaluated at `precision` forbids, weakest first."""
    return FORBIDDEN.get(precision, ())


def allowed(precision):
    """The precision a problem evaluated at `precision` allows that its reference may not apply to
    every operator (TF32, which SDPA's fused fp32 kernels skip)."""
    return ALLOWED.get(precision, ())


def tolerance_needed(torch, out, twin):
    """The smallest t with |out - twin| <= t + t |twin| on every element: the tolerance (atol = rtol)
    `out` would need to pass against its fp64 `twin`. None where out has a NaN or Inf the twin has not."""
    a, b = out.reshape(-1), twin.reshape(-1)
    need = 0.0
    for start in range(0, a.numel(), _CHUNK):
        x = a[start:start + _CHUNK].to(torch.float64)
        y = b[start:start + _CHUNK]
        d = (x - y).abs()
        same = (x == y) | (torch.isnan(x) & torch.isnan(y))  # inf == inf, and NaN where the twin has NaN
        d = torch.where(same, torch.zeros_like(d), d)
        if not bool(torch.isfinite(d).all()):
            return None
        if d.numel():
            need = max(need, float((d / (1 + y.abs())).max()))
    return need


def errors(torch, out, twin):
    """(relative L2 error, largest absolute error) of `out` against its fp64 `twin`; (None, None)
    where out has a NaN or Inf the twin has not, or the twin is all zero."""
    a, b = out.reshape(-1), twin.reshape(-1)
    sq_err = sq_ref = 0.0
    max_abs = 0.0
    for start in range(0, a.numel(), _CHUNK):
        x = a[start:start + _CHUNK].to(torch.float64)
        y = b[start:start + _CHUNK]
        d = x - y
        if not bool(torch.isfinite(d).all()):
            return None, None
        sq_err += float((d * d).sum())
        sq_ref += float((y * y).sum())
        max_abs = max(max_abs, float(d.abs().max())) if d.numel() else max_abs
    if sq_ref <= 0:
        return None, None
    return (sq_err / sq_ref) ** 0.5, max_abs


def _first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def call_with_draws(torch, problem, model, args, float_dtype=None):
    """`model` called on `args` as the problem calls its model, the last trial's draws played back
    (floating draws in float_dtype, where given): the outputs as a list."""
    from . import draws as draws_mod

    with torch.no_grad():
        if problem.draws:
            replay = draws_mod.replay(torch, list(problem.draws), float_dtype)
            with replay:
                out = problem.call(model, args)
            replay.done()
        else:
            out = problem.call(model, args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _sdpa_math(torch):
    """SDPA on its math backend, where TF32 applies to its products (its fused fp32 kernels skip
    it); a null context on a torch without the switch."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return contextlib.nullcontext()
    return sdpa_kernel(SDPBackend.MATH)


def private_inputs(torch, args, dtype=None):
    """Copies of the trial's inputs for one more forward, floating ones cast to `dtype` where given:
    never the trial's own tensors, which candidates get as they were, so a forward that writes an
    input in place (x.add_(1)) leaves them alone."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = a.to(dtype=dtype, copy=True) if dtype is not None and a.is_floating_point() else a.clone()
        out.append(a)
    return out


def _forward(torch, problem, precision, args):
    """The problem's outputs computed at `precision`, with the trial's draws played back, on copies
    of the trial's inputs."""
    context = contextlib.nullcontext()
    if precision == "tf32":
        model, cast, float_dtype = problem.model, private_inputs(torch, args), None
        numerics_mod.apply(torch, numerics_mod.numerics("tf32"))
        context = _sdpa_math(torch)
    else:
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        model = copy.deepcopy(problem.model).to(dtype)
        cast = private_inputs(torch, args, dtype)
        float_dtype = dtype
    try:
        with context:
            return call_with_draws(torch, problem, model, cast, float_dtype)
    finally:
        problem.pin_numerics()  # the load's numerics again, whatever happened


def measure(torch, problem, args, outs, named64):
    """{"precision", "outputs": [{"tensor", "own": {"precision", "rel_l2", "max_abs"}, "lower": [...], "note"}]}
    for the floating outputs that have an fp64 twin in `named64` ([(name@f64, tensor)])."""
    from .reference64 import SUFFIX

    twins = {name[:-len(SUFFIX)]: t for name, t in named64}
    names = problem.output_names(outs)
    figures = {n: {"tensor": n, "lower": [], "note": ""} for n in names if n in twins}
    if not figures:
        return {"precision": problem.precision, "outputs": []}
    # The reference's own error against fp64 at the precision it is evaluated at: how well
    # conditioned the operator is (the task states it where it is large).
    for name, o in zip(names, outs):
        if name in figures and isinstance(o, torch.Tensor) and o.shape == twins[name].shape:
            rel, max_abs = errors(torch, o, twins[name])
            figures[name]["own"] = {"precision": problem.precision, "rel_l2": rel, "max_abs": max_abs,
                                    "tolerance_needed": tolerance_needed(torch, o, twins[name])}
    runs = [(p, "lower") for p in forbidden(problem.precision)] + [(p, "allowed") for p in allowed(problem.precision)]
    for precision, kind in runs:
        try:
            lower = _forward(torch, problem, precision, args)
        except Exception as e:  # an op without half-precision support, out of memory
            torch.cuda.empty_cache()
            for f in figures.values():
                f["note"] += f"{'; ' if f['note'] else ''}{precision}: the forward failed ({_first_line(e)})"
            continue
        if len(lower) != len(outs):
            continue
        for name, o in zip(names, lower):
            f = figures.get(name)
            if f is None:
                continue
            if not isinstance(o, torch.Tensor) or o.shape != twins[name].shape:
                f["note"] += f"{'; ' if f['note'] else ''}{precision}: another output shape"
                continue
            rel, max_abs = errors(torch, o, twins[name])
            f.setdefault(kind, []).append({"precision": precision, "rel_l2": rel, "max_abs": max_abs})
            if rel is None:
                f["note"] += f"{'; ' if f['note'] else ''}{precision}: overflows or is all zero"
        del lower
        torch.cuda.empty_cache()
    for f in figures.values():
        if not f["note"]:
            del f["note"]
    return {"precision": problem.precision, "outputs": list(figures.values())}
