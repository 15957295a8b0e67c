"""The reference's FLOP count (tools/kagent_ref/flops.py): what FlopCounterMode reports becomes the
reply's "flops", and a torch without it, a model it cannot follow, or a count of zero become a note
instead. torch is not needed: a stand-in plays FlopCounterMode."""

import contextlib
import types
import unittest

from kagent_ref import flops


def fake_torch(counts=None, fail=None, has_counter=True):
    class Mode:
        def __init__(self, display=True):
            assert display is False, "the count must not print a table into the server's protocol stream"
            self.counts = counts or {}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def get_total_flops(self):
            return sum(self.counts.values())

        def get_flop_counts(self):
            return {"Global": dict(self.counts)}

    t = types.SimpleNamespace(no_grad=contextlib.nullcontext)
    t.utils = types.SimpleNamespace(flop_counter=types.SimpleNamespace(FlopCounterMode=Mode) if has_counter else None)
    return t


class Count(unittest.TestCase):
    def test_total_and_per_operator_counts_largest_first(self):
        ran = []
        got, note = flops.count(fake_torch({"aten.addmm": 2 * 256 * 8192 * 16384, "aten.mm": 12}),
                                lambda: ran.append(1))
        self.assertIsNone(note)
        self.assertEqual(ran, [1], "the forward call runs once, under the counter")
        self.assertEqual(got["total"], 2 * 256 * 8192 * 16384 + 12)
        self.assertEqual(list(got["by_op"]), ["aten.addmm", "aten.mm"])

    def test_nothing_counted_is_a_note_not_a_zero_floor(self):
        got, note = flops.count(fake_torch({}), lambda: None)
        self.assertIsNone(got)
        self.assertIn("does not count elementwise work", note)

    def test_a_failing_model_or_an_old_torch_is_a_note(self):
        def boom():
            raise RuntimeError("unsupported op\nmore")

        got, note = flops.count(fake_torch({"aten.mm": 1}), boom)
        self.assertIsNone(got)
        self.assertIn("RuntimeError: unsupported op", note)
        got, note = flops.count(fake_torch(has_counter=False), lambda: None)
        self.assertIsNone(got)
        self.assertIn("no usable FlopCounterMode", note)


if __name__ == "__main__":
    unittest.main()
