"""The numerics a precision pins PyTorch to (docs/measurement.md), kept apart from torch so that the
choices can be tested without it (tests/python).

fp32 means IEEE fp32 on both sides: PyTorch runs fp32 convolutions on TF32 tensor cores by default
(torch.backends.cudnn.allow_tf32 is True), which puts KernelBench's fp32 convolution references
5e-4 to 5e-3 off, ten times kagent's fp32 tolerance; and the eager and torch.compile baselines a
candidate must beat would run on tensor cores the candidate may not use. So for fp32 the server
turns TF32 off for matmuls and cuDNN (torch.compile's inductor reads the same flags) before the
reference outputs and the baselines. tf32 is PyTorch's default behaviour made explicit: fp32
tensors, TF32 allowed on both sides, with a tolerance sized for it (5e-2, measured over KernelBench).

fp16 and bf16 tensors are not touched by the TF32 flags except in the fp32 parts of a model (an
upcast softmax, say), which are pinned to IEEE fp32 as under fp32; the reduced-precision
reductions of half-precision GEMMs (allow_fp16/bf16_reduced_precision_reduction) keep PyTorch's
defaults: they are what eager PyTorch does at those precisions, and the 1e-2 tolerance covers them.
"""

import hashlib
import json

# precision -> (torch dtype name of the floating tensors, TF32 allowed)
PRECISIONS = {
    "fp32": ("float32", False),
    "tf32": ("float32", True),
    "fp16": ("float16", False),
    "bf16": ("bfloat16", False),
}


def numerics(precision):
    """What `precision` means for the reference: {"precision", "dtype", "allow_tf32",
    "matmul_precision"}. ValueError for an unknown precision."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision '{precision}': expected one of {', '.join(PRECISIONS)}")
    dtype, tf32 = PRECISIONS[precision]
    return {"precision": precision, "dtype": dtype, "allow_tf32": tf32,
            "matmul_precision": "high" if tf32 else "highest"}


def apply(torch, n):
    """Sets torch's global TF32 switches from numerics() `n` and returns them as read back
    (flags()): what the reference and the baselines then actually run with. The legacy switches,
    which every torch release since 1.7 has (newer ones map them onto their fp32_precision
    settings)."""
    torch.set_float32_matmul_precision(n["matmul_precision"])
    torch.backends.cuda.matmul.allow_tf32 = n["allow_tf32"]
    torch.backends.cudnn.allow_tf32 = n["allow_tf32"]
    return flags(torch)


def flags(torch):
    """The TF32 switches in effect: {"allow_tf32": both on, "matmul_allow_tf32", "cudnn_allow_tf32"}."""
    m = bool(torch.backends.cuda.matmul.allow_tf32)
    c = bool(torch.backends.cudnn.allow_tf32)
    return {"allow_tf32": m and c, "matmul_allow_tf32": m, "cudnn_allow_tf32": c}


def baseline_key(protocol, source_hash, precision, numerics_flags, gpu_name, torch_version, stop_rule):
    """The baseline cache key: baselines measured with other numerics (TF32 on or off) or by another
    protocol never stand in for these."""
    text = "|".join([protocol, source_hash, precision, json.dumps(numerics_flags, sort_keys=True), gpu_name,
                     torch_version, json.dumps(stop_rule or {}, sort_keys=True)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]
