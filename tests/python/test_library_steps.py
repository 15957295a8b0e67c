"""A reference's library call as kagent's plan step (tools/kagent_ref/library_steps.py): nn.Linear's
addmm with its transposed weight becomes trans_b with the weight's leading dimension and the bias
epilogue; a batched product keeps its batch strides; a convolution keeps its settings and its
result's shape; and what no one step expresses (addbmm, a broadcast C, an operand without a unit
stride, an integer dtype) says why instead of a plan. Stand-ins play tensors: no torch needed."""

import unittest

from kagent_ref import library_steps as ls
from kagent_ref import library_times as lt


class T:
    def __init__(self, shape, dtype="torch.float32", stride=None):
        self.shape, self.dtype = list(shape), dtype
        packed, n = [], 1
        for d in reversed(shape):
            packed.insert(0, n)
            n *= d
        self._stride = list(stride or packed)

    def stride(self):
        return tuple(self._stride)


class Gemm(unittest.TestCase):
    def test_linear_is_trans_b_with_the_bias_epilogue(self):
        x, w, bias = T([128, 256]), T([64, 256]), T([64])
        wt = T([256, 64], stride=[1, 256])  # W.t()
        r = ls.plan_for("gemm", "aten.addmm", {"self": bias, "mat1": x, "mat2": wt}, T([128, 64]))
        step = r["plan"]["launch"][0]["gemm"]
        self.assertEqual((step["m"], step["n"], step["k"]), (128, 64, 256))
        self.assertEqual((step["trans_a"], step["trans_b"]), (False, True))
        self.assertEqual((step["lda"], step["ldb"]), (256, 256))
        self.assertEqual(step["bias"], "bias")
        self.assertNotIn("c", step)
        scratch = r["plan"]["scratch"]
        self.assertEqual(scratch["b"], {"dtype": "f32", "shape": [64 * 256]})
        self.assertEqual(scratch["d"]["shape"], [128, 64])
        self.assertEqual(scratch["bias"]["shape"], [64])
        del w

    def test_plain_mm_in_half_precision(self):
        r = ls.plan_for("gemm", "aten.mm", {"self": T([32, 48], "torch.float16"), "mat2": T([48, 16], "torch.float16")},
                        None)
        step = r["plan"]["launch"][0]["gemm"]
        self.assertEqual((step["m"], step["n"], step["k"], step["lda"], step["ldb"]), (32, 16, 48, 48, 16))
        self.assertEqual(r["plan"]["scratch"]["a"]["dtype"], "f16")

    def test_a_transposed_a_and_a_padded_leading_dimension(self):
        at = T([64, 32], stride=[1, 80])  # a [32, 80] buffer's first 64 columns, transposed
        b = T([32, 16], stride=[20, 1])
        step = ls.plan_for("gemm", "aten.mm", {"self": at, "mat2": b}, None)["plan"]["launch"][0]["gemm"]
        self.assertTrue(step["trans_a"])
        self.assertEqual((step["lda"], step["ldb"]), (80, 20))

    def test_batched_products_keep_their_batch_strides(self):
        a, b = T([8, 64, 32]), T([8, 32, 16])
        r = ls.plan_for("gemm", "aten.bmm", {"self": a, "mat2": b}, None)
        step = r["plan"]["launch"][0]["gemm"]
        self.assertEqual((step["batch"], step["stride_a"], step["stride_b"]), (8, 64 * 32, 32 * 16))
        self.assertEqual(r["plan"]["scratch"]["a"]["shape"], [8 * 64 * 32])
        self.assertEqual(r["plan"]["scratch"]["d"]["shape"], [8, 64, 16])
        shared = T([8, 32, 16], stride=[0, 16, 1])  # one matrix expanded over the batch
        step = ls.plan_for("gemm", "aten.bmm", {"self": a, "mat2": shared}, None)["plan"]["launch"][0]["gemm"]
        self.assertEqual(step["stride_b"], 0)

    def test_baddbmm_with_a_full_c_and_alpha(self):
        c, a, b = T([4, 8, 16]), T([4, 8, 32]), T([4, 32, 16])
        r = ls.plan_for("gemm", "aten.baddbmm", {"self": c, "batch1": a, "batch2": b, "beta": 0.5, "alpha": 2.0}, None)
        step = r["plan"]["launch"][0]["gemm"]
        self.assertEqual((step["c"], step["beta"], step["alpha"], step["stride_c"]), ("c", 0.5, 2.0, 8 * 16))

    def test_what_no_step_expresses_says_why(self):
        a, b = T([8, 64, 32]), T([8, 32, 16])
        self.assertIn("sums", ls.plan_for("gemm", "aten.addbmm", {"self": T([64, 16]), "batch1": a, "batch2": b},
                                          None)["plan_note"])
        col = T([128, 1])  # a column broadcast over n
        note = ls.plan_for("gemm", "aten.addmm", {"self": col, "mat1": T([128, 32]), "mat2": T([32, 64])},
                           None)["plan_note"]
        self.assertIn("broadcast", note)
        odd = T([16, 16], stride=[32, 2])
        self.assertIn("no unit stride", ls.plan_for("gemm", "aten.mm", {"self": odd, "mat2": T([16, 4])},
                                                    None)["plan_note"])
        ints = T([4, 4], "torch.int64")
        self.assertIn("int64", ls.plan_for("gemm", "aten.mm", {"self": ints, "mat2": ints}, None)["plan_note"])


class Conv(unittest.TestCase):
    def test_settings_and_the_results_shape(self):
        args = {"input": T([16, 3, 64, 64]), "weight": T([8, 3, 3, 3]), "bias": T([8]), "stride": [2, 2],
                "padding": [1, 1], "dilation": [1, 1], "transposed": False, "output_padding": [0, 0], "groups": 1}
        r = ls.plan_for("conv", "aten.convolution", args, T([16, 8, 32, 32]))
        step = r["plan"]["launch"][0]["conv"]
        self.assertEqual(step, {"x": "x", "w": "w", "y": "y", "bias": "bias", "stride": [2, 2], "padding": [1, 1],
                                "dilation": [1, 1], "groups": 1, "transposed": False})
        self.assertEqual(r["plan"]["scratch"]["y"]["shape"], [16, 8, 32, 32])

    def test_transposed_keeps_output_padding_and_no_bias(self):
        args = {"input": T([2, 8, 10, 10, 10]), "weight": T([8, 4, 3, 3, 3]), "bias": None, "stride": [2, 2, 2],
                "padding": [1, 1, 1], "dilation": [1, 1, 1], "transposed": True, "output_padding": [1, 1, 1],
                "groups": 1}
        step = ls.plan_for("conv", "aten.convolution", args, T([2, 4, 20, 20, 20]))["plan"]["launch"][0]["conv"]
        self.assertTrue(step["transposed"])
        self.assertEqual(step["output_padding"], [1, 1, 1])
        self.assertNotIn("bias", step)

    def test_attention_has_no_step(self):
        self.assertEqual(ls.plan_for("attention", "aten._scaled_dot_product_flash_attention", {}, None), {})


class Recorded(unittest.TestCase):
    def test_the_plan_is_kept_with_the_first_sight_of_a_call(self):
        rec = lt.Recorder(budget_s=60)
        plan = {"plan": {"scratch": {}, "launch": []}}
        rec.call("aten.mm", "gemm", "a", lambda: {"median_ms": 0.5}, plan)
        rec.call("aten.mm", "gemm", "a", lambda: {"median_ms": 0.5}, plan)
        rec.call("aten.bmm", "gemm", "b", lambda: {"median_ms": 0.1}, {"plan_note": "why"})
        calls = rec.result()["calls"]
        self.assertEqual(calls[0]["plan"], plan["plan"])
        self.assertEqual(calls[1]["plan_note"], "why")


if __name__ == "__main__":
    unittest.main()
