"""kagent_ref.forward_args: get_inputs()' values bound to forward's parameters as KernelBench's
`model(*get_inputs())` binds them (level3/35_LSTM, 46-49 leave out parameters with None defaults)."""

import unittest

from kagent_ref.forward_args import BindError, bind


class ForwardArgs(unittest.TestCase):
    def test_all_given(self):
        def forward(self_, a, b):
            return a + b
        b = bind(forward.__get__(object()), [1, 2])
        self.assertEqual(b.names, ["a", "b"])
        self.assertEqual(b.call(forward.__get__(object())), 3)

    def test_none_default_is_not_an_input(self):
        # level3/35_LSTM: forward(self, x, h0=None, c0=None), get_inputs() returns [x]
        seen = {}

        def forward(x, h0=None, c0=None):
            seen.update(x=x, h0=h0, c0=c0)
            return x
        b = bind(forward, ["X"])
        self.assertEqual(b.names, ["x"])
        self.assertEqual(b.values, ["X"])
        b.call(forward)
        self.assertEqual(seen, {"x": "X", "h0": None, "c0": None})

    def test_value_default_is_passed_by_name(self):
        # A scalar default after a None default: passed by keyword, so the None one stays unset.
        seen = {}

        def forward(x, mask=None, scale=0.5, dim=1):
            seen.update(x=x, mask=mask, scale=scale, dim=dim)
        b = bind(forward, ["X"])
        self.assertEqual(b.names, ["x", "scale", "dim"])
        self.assertEqual(b.values, ["X", 0.5, 1])
        b.call(forward, ["Y", 2.0, 3])  # the trial's own (cast) values replace the defaults
        self.assertEqual(seen, {"x": "Y", "mask": None, "scale": 2.0, "dim": 3})

    def test_keyword_only_default(self):
        def forward(x, *, eps=1e-5):
            return eps
        b = bind(forward, ["X"])
        self.assertEqual(b.names, ["x", "eps"])
        self.assertEqual(b.call(forward), 1e-5)

    def test_missing_value_without_default(self):
        def forward(x, y):
            pass
        with self.assertRaisesRegex(BindError, r"returns 1 values, forward takes 2 \(x, y\) and 'y' has no default"):
            bind(forward, ["X"], "p.py")

    def test_too_many_values(self):
        def forward(x):
            pass
        with self.assertRaisesRegex(BindError, r"returns 2 values, forward takes at most 1 \(x\)"):
            bind(forward, [1, 2])

    def test_var_args_refused(self):
        def forward(*xs):
            pass
        with self.assertRaisesRegex(BindError, r"forward takes \*xs"):
            bind(forward, [1])


if __name__ == "__main__":
    unittest.main()
