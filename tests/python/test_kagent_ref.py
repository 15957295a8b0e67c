"""The reference server's torch-free logic (tools/kagent_ref): which numerics each precision pins,
that they are set on torch's switches and read back, that the baseline cache key changes with them,
and the fp64 twin's sizing rule. torch is not needed: a stand-in object plays its switches."""

import types
import unittest

from kagent_ref import lower_precision, numerics, reference64


def fake_torch():
    """torch's TF32 switches as PyTorch's defaults leave them: cuDNN on, matmul off."""
    t = types.SimpleNamespace()
    t.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)),
                                       cudnn=types.SimpleNamespace(allow_tf32=True))
    t.matmul_precision = "highest"

    def set_precision(p):
        t.matmul_precision = p
        t.backends.cuda.matmul.allow_tf32 = p != "highest"  # what torch does with this setting

    t.set_float32_matmul_precision = set_precision
    return t


class Numerics(unittest.TestCase):
    def test_fp32_turns_tf32_off_everywhere(self):
        t = fake_torch()
        got = numerics.apply(t, numerics.numerics("fp32"))
        self.assertFalse(t.backends.cudnn.allow_tf32, "PyTorch's default TF32 convolutions must be off")
        self.assertFalse(t.backends.cuda.matmul.allow_tf32)
        self.assertEqual(t.matmul_precision, "highest")
        self.assertEqual(got, {"allow_tf32": False, "matmul_allow_tf32": False, "cudnn_allow_tf32": False})

    def test_tf32_turns_it_on_for_matmul_and_cudnn(self):
        t = fake_torch()
        got = numerics.apply(t, numerics.numerics("tf32"))
        self.assertTrue(t.backends.cudnn.allow_tf32)
        self.assertTrue(t.backends.cuda.matmul.allow_tf32)
        self.assertEqual(t.matmul_precision, "high")
        self.assertTrue(got["allow_tf32"])

    def test_switching_back_from_tf32_to_fp32(self):
        t = fake_torch()
        numerics.apply(t, numerics.numerics("tf32"))
        self.assertFalse(numerics.apply(t, numerics.numerics("fp32"))["allow_tf32"])

    def test_tensor_dtypes_and_half_precisions(self):
        self.assertEqual(numerics.numerics("tf32")["dtype"], "float32", "tf32 is a precision for fp32 tensors")
        self.assertEqual(numerics.numerics("fp32")["dtype"], "float32")
        self.assertEqual(numerics.numerics("fp16")["dtype"], "float16")
        self.assertEqual(numerics.numerics("bf16")["dtype"], "bfloat16")
        self.assertFalse(numerics.numerics("bf16")["allow_tf32"], "fp32 parts of a half model stay IEEE")
        with self.assertRaisesRegex(ValueError, "fp8.*fp32, tf32, fp16, bf16"):
            numerics.numerics("fp8")

    def test_baseline_key_depends_on_the_numerics(self):
        off = {"allow_tf32": False, "matmul_allow_tf32": False, "cudnn_allow_tf32": False}
        on = {"allow_tf32": True, "matmul_allow_tf32": True, "cudnn_allow_tf32": True}
        args = ("v2", "hash", "fp32")
        k_off = numerics.baseline_key(*args, off, "H100", "2.8", {})
        self.assertNotEqual(k_off, numerics.baseline_key(*args, on, "H100", "2.8", {}))
        self.assertNotEqual(k_off, numerics.baseline_key("v1", "hash", "fp32", off, "H100", "2.8", {}))
        self.assertEqual(k_off, numerics.baseline_key(*args, dict(off), "H100", "2.8", None))


class PrivateInputs(unittest.TestCase):
    """The forwards at other precisions run on copies of the trial's inputs: the trial's own tensors
    are what candidates get, so a forward that writes an input in place (x.add_(1)) must not reach
    them. Stand-ins play torch's tensors."""

    class Tensor:
        def __init__(self, dtype):
            self.dtype = dtype

        def is_floating_point(self):
            return self.dtype in ("float32", "bfloat16", "float16")

        def clone(self):
            return PrivateInputs.Tensor(self.dtype)

        def to(self, dtype=None, copy=False):
            if not copy and dtype == self.dtype:
                return self  # as torch does: no copy unless asked
            return PrivateInputs.Tensor(dtype)

    class Torch:
        pass

    def setUp(self):
        self.torch = self.Torch()
        self.torch.Tensor = self.Tensor

    def test_every_tensor_is_a_copy_and_other_values_pass_through(self):
        x, idx = self.Tensor("float32"), self.Tensor("int64")
        out = lower_precision.private_inputs(self.torch, [x, idx, 3, "mean"])
        self.assertIsNot(out[0], x)
        self.assertIsNot(out[1], idx)
        self.assertEqual((out[0].dtype, out[1].dtype), ("float32", "int64"))
        self.assertEqual(out[2:], [3, "mean"])

    def test_cast_ones_are_copies_even_at_their_own_dtype(self):
        h, f, i = self.Tensor("float16"), self.Tensor("float32"), self.Tensor("int64")
        out = lower_precision.private_inputs(self.torch, [h, f, i], "float16")
        self.assertIsNot(out[0], h)
        self.assertEqual([t.dtype for t in out], ["float16", "float16", "int64"])
        self.assertIsNot(out[2], i)


class ForbiddenPrecisions(unittest.TestCase):
    """What the precision rule's figures are measured at (lower_precision.py): each precision
    forbids only precisions with fewer mantissa bits than its own arithmetic, and names only known
    ones."""

    MANTISSA = {"fp32": 23, "tf32": 10, "fp16": 10, "bf16": 7}

    def test_every_precision_says_what_it_forbids(self):
        self.assertEqual(set(lower_precision.FORBIDDEN), set(numerics.PRECISIONS))

    def test_fp32_forbids_tf32_bf16_fp16_and_tf32_the_half_types(self):
        self.assertEqual(lower_precision.forbidden("fp32"), ("tf32", "bf16", "fp16"))
        self.assertEqual(lower_precision.forbidden("tf32"), ("bf16", "fp16"))
        self.assertEqual(lower_precision.forbidden("bf16"), ())
        self.assertEqual(lower_precision.forbidden("fp16"), ())
        self.assertEqual(lower_precision.forbidden("fp8"), ())

    def test_a_forbidden_precision_is_never_more_precise(self):
        for p, lower in lower_precision.FORBIDDEN.items():
            for q in lower:
                self.assertIn(q, numerics.PRECISIONS)
                self.assertLessEqual(self.MANTISSA[q], self.MANTISSA[p], f"{p} forbids {q}")


    def test_tf32_allows_tf32_measured_with_every_operator_at_it(self):
        # A tf32 problem's reference runs SDPA's fused fp32 kernels, which skip TF32: the figure of
        # the problem computed at TF32 throughout anchors the rule there. Nothing else is allowed.
        self.assertEqual(lower_precision.allowed("tf32"), ("tf32",))
        for p in ("fp32", "bf16", "fp16"):
            self.assertEqual(lower_precision.allowed(p), ())
        for p, allowed in lower_precision.ALLOWED.items():
            for q in allowed:
                self.assertNotIn(q, lower_precision.forbidden(p))


class Fp64Sizing(unittest.TestCase):
    def test_fits_with_margin_and_spare(self):
        gib = 1 << 30
        self.assertTrue(reference64.fits(4 * gib, 7 * gib))
        self.assertFalse(reference64.fits(4 * gib, 5.5 * gib), "intermediates need a margin beyond in + out")
        self.assertFalse(reference64.fits(0, gib // 2), "the runner needs memory to spare")

    def test_an_exact_reference_skips_later_twins_only_when_large(self):
        big, small = reference64.EXACT_SKIP, reference64.EXACT_SKIP - 1
        self.assertTrue(reference64.skips_twins(big, lambda: True))
        self.assertFalse(reference64.skips_twins(big, lambda: False), "any difference keeps the twins")
        asked = []
        self.assertFalse(reference64.skips_twins(small, lambda: asked.append(1) or True), "small: twins are cheap")
        self.assertEqual(asked, [], "the outputs are not read for a small one")

    def test_twin_names(self):
        self.assertEqual("out" + reference64.SUFFIX, "out@f64")



def _torch():
    try:
        import torch

        return torch
    except Exception:
        return None


@unittest.skipIf(_torch() is None, "torch is not installed")
class ToleranceNeeded(unittest.TestCase):
    """The tolerance (atol = rtol) a reference output would need against its fp64 twin, which the
    task states where the reference itself would fail (an ill-conditioned operator)."""

    def test_the_worst_element_sets_it(self):
        torch = _torch()
        twin = torch.tensor([0.0, 1.0, 100.0, -3.0], dtype=torch.float64)
        out = torch.tensor([0.5, 1.0, 101.0, -3.0], dtype=torch.float32)
        # |0.5 - 0| / (1 + 0) = 0.5; |101 - 100| / 101 < 0.01
        self.assertAlmostEqual(lower_precision.tolerance_needed(torch, out, twin), 0.5)

    def test_matching_infinities_and_nans_need_nothing(self):
        torch = _torch()
        inf, nan = float("inf"), float("nan")
        twin = torch.tensor([inf, nan, 2.0], dtype=torch.float64)
        out = torch.tensor([inf, nan, 2.0], dtype=torch.float32)
        self.assertEqual(lower_precision.tolerance_needed(torch, out, twin), 0.0)

    def test_a_nan_the_twin_has_not_cannot_pass(self):
        torch = _torch()
        twin = torch.tensor([1.0, 2.0], dtype=torch.float64)
        self.assertIsNone(lower_precision.tolerance_needed(torch, torch.tensor([float("nan"), 2.0]), twin))
        self.assertIsNone(lower_precision.tolerance_needed(torch, torch.tensor([float("inf"), 2.0]), twin))


if __name__ == "__main__":
    unittest.main()
