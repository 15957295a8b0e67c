"""The reference's library calls (tools/kagent_ref/library_times.py): which aten operators count as
a GEMM, convolution or attention call, how a call's arguments are named (layout included, since a
transposed operand is another call for the library), that a repeated call is timed once and
counted, and that calls met after the budget are counted but left untimed, said in the note. torch
is not needed: stand-ins play tensors and the clock."""

import unittest

from kagent_ref import library_times as lt


class FakeTensor:
    def __init__(self, shape, dtype="torch.float32", stride=None):
        self.shape, self.dtype = shape, dtype
        packed, n = [], 1
        for d in reversed(shape):
            packed.insert(0, n)
            n *= d
        self._stride = stride or packed
        self._contiguous = list(self._stride) == packed

    def is_contiguous(self):
        return self._contiguous

    def stride(self):
        return tuple(self._stride)


def is_tensor(v):
    return isinstance(v, FakeTensor)


class Kinds(unittest.TestCase):
    def test_library_operators_and_others(self):
        self.assertEqual(lt.kind_of("aten.mm.default"), "gemm")
        self.assertEqual(lt.kind_of("aten.addmm.default"), "gemm")
        self.assertEqual(lt.kind_of("aten.bmm.default"), "gemm")
        self.assertEqual(lt.kind_of("aten.convolution.default"), "conv")
        self.assertEqual(lt.kind_of("aten._scaled_dot_product_flash_attention.default"), "attention")
        self.assertIsNone(lt.kind_of("aten.relu.default"))
        self.assertIsNone(lt.kind_of("aten.add.Tensor"))
        self.assertIsNone(lt.kind_of("prims.mm.default"))


class Describe(unittest.TestCase):
    def test_convolution_named_by_its_schema_without_none(self):
        names = ["input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding",
                 "groups"]
        text = lt.describe(names, [FakeTensor([16, 3, 64, 64]), FakeTensor([8, 3, 3, 3]), None, [1, 1], [0, 0],
                                   [1, 1], False, [0, 0], 1], {}, is_tensor)
        self.assertEqual(text, "input [16, 3, 64, 64] float32, weight [8, 3, 3, 3] float32, stride [1, 1], "
                               "padding [0, 0], dilation [1, 1], transposed False, output_padding [0, 0], groups 1")

    def test_a_transposed_operand_shows_its_strides(self):
        a = FakeTensor([128, 256])
        bt = FakeTensor([256, 64], stride=[1, 256])  # W.t() of a [64, 256] weight
        text = lt.describe(["self", "mat2"], [a, bt], {}, is_tensor)
        self.assertIn("mat2 [256, 64] float32 strides (1, 256)", text)
        self.assertNotIn("self [128, 256] float32 strides", text)

    def test_keyword_arguments_and_floats(self):
        text = lt.describe(["self", "mat1", "mat2"], [FakeTensor([4]), FakeTensor([2, 3]), FakeTensor([3, 4])],
                           {"beta": 0.5, "alpha": 2.0}, is_tensor)
        self.assertTrue(text.endswith("beta 0.5, alpha 2"), text)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Recording(unittest.TestCase):
    def test_a_repeated_call_is_timed_once_and_counted(self):
        rec = lt.Recorder(budget_s=60, clock=Clock())
        timed = []

        def timing(ms):
            def f():
                timed.append(ms)
                return {"median_ms": ms}
            return f

        rec.call("aten.mm", "gemm", "a", timing(0.5))
        rec.call("aten.mm", "gemm", "a", timing(0.5))
        rec.call("aten.mm", "gemm", "a", timing(0.5))
        rec.call("aten.convolution", "conv", "c", lambda: {"median_ms": 1.0, "fastest_ms": 0.7})
        self.assertEqual(timed, [0.5])
        r = rec.result()
        self.assertEqual([(c["op"], c["calls"]) for c in r["calls"]], [("aten.mm", 3), ("aten.convolution", 1)])
        self.assertAlmostEqual(r["total_ms"], 2.5)
        self.assertEqual(r["calls"][0]["library"], "cuBLAS")
        self.assertEqual(r["calls"][1]["library"], "cuDNN")
        self.assertEqual(r["calls"][1]["fastest_ms"], 0.7)
        self.assertIsNone(r["note"])

    def test_calls_after_the_budget_are_counted_untimed_and_said(self):
        clock = Clock()
        rec = lt.Recorder(budget_s=10, clock=clock)
        rec.call("aten.mm", "gemm", "first", lambda: {"median_ms": 0.1})
        clock.now = 11
        rec.call("aten.mm", "gemm", "late", lambda: self.fail("timed after the budget"))
        rec.call("aten.mm", "gemm", "late", lambda: self.fail("timed after the budget"))
        r = rec.result()
        self.assertEqual([c["args"] for c in r["calls"]], ["first", "late"])
        self.assertIsNone(r["calls"][1]["median_ms"])
        self.assertEqual(r["calls"][1]["calls"], 2)
        self.assertAlmostEqual(r["total_ms"], 0.1)
        self.assertIn("1 of 2 distinct calls untimed", r["note"])


if __name__ == "__main__":
    unittest.main()
