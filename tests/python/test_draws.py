"""The random numbers a reference draws inside forward (tools/kagent_ref/draws.py): their names,
what the tensor table says they are, the seed each trial's forward starts from and the note on a
ModelNew call that drew otherwise. torch-free; with torch installed, the recording and the replay
run on the CPU too (the GPU tests in tests/gpu/test_drawn_inputs.cpp cover CUDA's dropout)."""

import os
import tempfile
import textwrap
import unittest

from kagent_ref import draws


def dropout(call, module="dropout", p=0.2):
    return draws.Draw("native_dropout", "dropout", call, [128, 16384], "f32", p, module, "Dropout", True)


def randn(call, text, line=33):
    return draws.Draw("randn", "factory", call, [6, 10, 256], "f32", None, "", "Model", False, line, text)


class Names(unittest.TestCase):
    def test_lstm_states_take_their_variable_names(self):
        got = draws.name_draws([randn(1, "h0 = torch.randn(self.num_layers, batch_size, self.hidden_size)"),
                                randn(2, "c0 = torch.randn(self.num_layers, batch_size, self.hidden_size)", 35)],
                               ["x", "lstm_weight_ih_l0", "out"])
        self.assertEqual([d.name for d in got], ["h0", "c0"])

    def test_a_dropout_is_named_by_its_module(self):
        self.assertEqual([d.name for d in draws.name_draws([dropout(1)], ["x", "out"])], ["dropout_mult"])
        nested = dropout(1, module="blocks.0.drop")
        self.assertEqual(draws.name_draws([nested], [])[0].name, "blocks_0_drop_mult")
        functional = dropout(1, module="")
        self.assertEqual(draws.name_draws([functional], [])[0].name, "dropout_mult", "F.dropout in the model itself")

    def test_repeated_bases_are_numbered_in_call_order(self):
        got = draws.name_draws([dropout(1), dropout(2), randn(3, "noise = torch.randn(4)")], [])
        self.assertEqual([d.name for d in got], ["dropout_mult_1", "dropout_mult_2", "noise"])

    def test_a_name_the_operator_has_gets_drawn_appended(self):
        got = draws.name_draws([randn(1, "x = torch.randn(4)")], ["x", "out"])
        self.assertEqual(got[0].name, "x_drawn")

    def test_unassigned_and_in_place_draws(self):
        bare = randn(1, "return x + torch.randn(4)")
        filled = draws.Draw("bernoulli_", "inplace", 2, [4], "f32", None, "drop", "Dropout2d", True)
        got = draws.name_draws([bare, filled], [])
        self.assertEqual([d.name for d in got], ["draw_randn", "drop_bernoulli"])

    def test_assigned_name_reads_simple_assignments_only(self):
        self.assertEqual(draws.assigned_name("    h0 = torch.randn(3)"), "h0")
        self.assertEqual(draws.assigned_name("h0: torch.Tensor = torch.randn(3)"), "h0")
        self.assertIsNone(draws.assigned_name("h0, c0 = torch.randn(3), torch.randn(3)"))
        self.assertIsNone(draws.assigned_name("if h0 == torch.randn(3):"))
        self.assertIsNone(draws.assigned_name("self.h0 = torch.randn(3)"))
        self.assertIsNone(draws.assigned_name(None))


class Meanings(unittest.TestCase):
    def test_dropout_says_what_to_multiply(self):
        d = draws.name_draws([dropout(1)], [])[0]
        self.assertEqual(draws.meaning(d), "drawn by nn.Dropout(p=0.2) in forward, call 1: 0 or 1/(1-p) = 1.25 per "
                         "element; multiply the dropout's input by this (the reference's dropout output is input * "
                         "this)")
        spec = d.spec()
        self.assertEqual((spec["name"], spec["shape"], spec["dtype"], spec["op"], spec["call"]),
                         ("dropout_mult", [128, 16384], "f32", "native_dropout", 1))

    def test_randn_names_its_distribution_and_line(self):
        d = randn(2, "c0 = torch.randn(self.num_layers, batch_size, self.hidden_size, device=x.device)", 35)
        text = draws.meaning(d)
        self.assertTrue(text.startswith("drawn by torch.randn in forward, call 2: standard normal values; forward "
                                        "uses them as c0 (problem line 35: `c0 = torch.randn("), text)

    def test_functional_dropout(self):
        d = draws.Draw("native_dropout", "dropout", 1, [4], "f16", 0.5, "", "Model", False)
        self.assertIn("drawn by dropout(p=0.5) in forward, call 1: 0 or 1/(1-p) = 2 per element", draws.meaning(d))


class Seeds(unittest.TestCase):
    def test_draw_seed_is_fixed_per_trial_and_not_the_trial_seed(self):
        self.assertEqual(draws.draw_seed(42), draws.draw_seed(42))
        self.assertNotEqual(draws.draw_seed(42), draws.draw_seed(43))
        self.assertNotEqual(draws.draw_seed(42), 42)
        for s in (0, 1, 2 ** 64 - 1):
            self.assertTrue(0 <= draws.draw_seed(s) < 2 ** 63, "torch.manual_seed takes it")

    def test_layouts(self):
        a = draws.layout(draws.name_draws([dropout(1)], []))
        b = draws.layout(draws.name_draws([dropout(1)], []))
        self.assertEqual(a, b)
        c = draws.name_draws([draws.Draw("native_dropout", "dropout", 1, [64, 16384], "f32", 0.2, "dropout")], [])
        self.assertNotEqual(a, draws.layout(c))
        self.assertEqual(draws.layout_text(a), "dropout_mult [128, 16384] f32")
        self.assertEqual(draws.layout_text([]), "none")


class FingerprintNote(unittest.TestCase):
    @staticmethod
    def cuda(seed, offset):
        return (seed.to_bytes(8, "little") + offset.to_bytes(8, "little")).hex()

    def test_same_state_says_nothing(self):
        s = {"cpu": "aa", "cuda": self.cuda(7, 16)}
        self.assertIsNone(draws.fingerprint_note(s, dict(s)))
        self.assertIsNone(draws.fingerprint_note(None, s))

    def test_other_philox_offset_is_named(self):
        note = draws.fingerprint_note({"cpu": "aa", "cuda": self.cuda(7, 16)}, {"cpu": "aa", "cuda": self.cuda(7, 4)})
        self.assertIn("drew other random numbers than the reference", note)
        self.assertIn("Philox offset 4, the reference's forward to 16", note)
        self.assertEqual(draws.philox_offset(self.cuda(7, 16)), 16)
        self.assertIsNone(draws.philox_offset("zz"))

    def test_cpu_generator(self):
        note = draws.fingerprint_note({"cpu": "aa"}, {"cpu": "bb"})
        self.assertIn("CPU generator", note)


def _torch():
    try:
        import torch

        return torch
    except Exception:
        return None


PROBLEM = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
            self.drop = nn.Dropout2d(0.25)

        def forward(self, x):
            h0 = torch.randn(2, 16, device=x.device)
            y = self.lin(x) + h0
            return self.drop(y.view(2, 16, 1, 1)).view(2, 16) + torch.rand(2, 16, device=x.device)

    def get_inputs():
        return [torch.randn(2, 16)]

    def get_init_inputs():
        return []
    """)


@unittest.skipIf(_torch() is None, "torch is not installed")
class RecordAndReplay(unittest.TestCase):
    """On the CPU, where dropout is bernoulli_ in place (the GPU runs native_dropout)."""

    def setUp(self):
        import importlib.util

        torch = _torch()
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "problem.py")
        with open(path, "w") as f:
            f.write(PROBLEM)
        spec = importlib.util.spec_from_file_location("kagent_draws_problem", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(0)
        self.torch, self.path, self.model = torch, path, module.Model()
        self.x = torch.randn(2, 16)

    def tearDown(self):
        self.dir.cleanup()

    def record(self, seed):
        torch = self.torch
        torch.manual_seed(seed)
        rec = draws.recorder(torch, self.model, self.path, str)
        with torch.no_grad(), rec:
            out = self.model(self.x)
        return out, draws.name_draws(rec.draws, ["x", "lin_weight", "lin_bias", "out"])

    def test_every_draw_is_recorded_in_call_order_with_its_place(self):
        out, got = self.record(1)
        self.assertEqual([(d.name, d.op, d.kind) for d in got],
                         [("h0", "randn", "factory"), ("drop_bernoulli", "bernoulli_", "inplace"),
                          ("draw_rand", "rand", "factory")])
        self.assertEqual(got[0].line, 11)
        self.assertEqual(got[1].module, "drop")
        self.assertEqual(got[1].shape, [2, 16, 1, 1])
        self.assertTrue(set(got[1].tensor.flatten().tolist()) <= {0.0, 1.0}, "the draw itself, before the dropout "
                        "scales it in place")
        again, _ = self.record(1)
        self.assertTrue(self.torch.equal(out, again), "recording changes nothing")

    def test_replay_gives_back_the_recorded_numbers(self):
        torch = self.torch
        out, got = self.record(1)
        torch.manual_seed(99)  # other numbers, were they drawn
        rep = draws.replay(torch, got)
        with torch.no_grad(), rep:
            replayed = self.model(self.x)
        rep.done()
        self.assertTrue(torch.equal(out, replayed))
        twin = __import__("copy").deepcopy(self.model).to(torch.float64)
        rep64 = draws.replay(torch, got, torch.float64)
        with torch.no_grad(), rep64:
            out64 = twin(self.x.double())
        self.assertEqual(out64.dtype, torch.float64)
        self.assertLess((out64 - out.double()).abs().max().item(), 1e-5)

    def test_replay_refuses_other_draws(self):
        torch = self.torch
        _, got = self.record(1)
        rep = draws.replay(torch, got[:1])
        with self.assertRaises(draws.ReplayMismatch), torch.no_grad(), rep:
            self.model(self.x)

    def test_ops_that_only_sometimes_draw_are_not_draws(self):
        """torch tags _cudnn_rnn, lstm and attention nondeterministic_seeded (they may drop out
        inside); their outputs are no draws, and an LSTM's would otherwise become an input."""
        torch, aten = self.torch, self.torch.ops.aten
        for op in (aten._cudnn_rnn.default, aten.lstm.input, aten._scaled_dot_product_flash_attention.default,
                   aten.rrelu_with_noise.default):
            self.assertIsNone(draws.classify(torch, op, (), {}), op)
        x = torch.ones(3)
        self.assertIsNone(draws.classify(torch, aten.native_dropout.default, (x, 0.5, False), {}), "eval mode")
        self.assertEqual(draws.classify(torch, aten.native_dropout.default, (x, 0.5, True), {}), "dropout")
        self.assertEqual(draws.classify(torch, aten.bernoulli_.float, (x, 0.5), {}), "inplace")
        self.assertEqual(draws.classify(torch, aten.randn.default, ([3],), {}), "factory")

    def test_native_dropout_becomes_its_multiplier(self):
        """What the GPU runs for nn.Dropout, called directly here (the CPU's nn.Dropout is bernoulli_)."""
        torch = self.torch

        class Drop(torch.nn.Module):
            def forward(self, x):
                return torch.native_dropout(x, 0.2, True)[0] + 1

        x = torch.randn(64, 32)
        torch.manual_seed(3)
        rec = draws.recorder(torch, Drop(), None, str)
        with torch.no_grad(), rec:
            out = Drop()(x)
        (d,) = draws.name_draws(rec.draws, ["x", "out"])
        self.assertEqual((d.name, d.kind, d.p), ("dropout_mult", "dropout", 0.2))
        self.assertEqual(set(d.tensor.flatten().tolist()), {0.0, 1.25})
        self.assertTrue(torch.equal(out, x * d.tensor + 1), "the reference's output is input * multiplier")
        rep = draws.replay(torch, [d], torch.float64)
        with torch.no_grad(), rep:
            out64 = Drop()(x.double())
        self.assertTrue(torch.allclose(out64, x.double() * d.tensor.double() + 1))

    def test_problem_signature_and_tensors_carry_the_draws(self):
        """kagent_ref.problem on the CPU: the draws in the signature, in the exported tensors after
        forward's, fresh each trial, and the generator state a trial's forward starts from."""
        from kagent_ref.problem import Problem

        torch = self.torch
        p = Problem(self.path, "fp32", 0, 0)
        args, outs = p.trial(1)
        sig = p.signature(args, outs)
        self.assertEqual([d["name"] for d in sig["draws"]], ["h0", "drop_bernoulli", "draw_rand"])
        self.assertTrue(sig["draws"][0]["meaning"].startswith("drawn by torch.randn in forward, call 1"))
        self.assertEqual([n for n, _ in p.named_tensors(args, outs)],
                         ["x", "h0", "drop_bernoulli", "draw_rand", "lin_weight", "lin_bias", "out"])
        first = p.draws[0].tensor.clone()
        seed = p.draw_seed
        p.trial(2)
        self.assertNotEqual(p.draw_seed, seed)
        self.assertFalse(torch.equal(first, p.draws[0].tensor), "fresh draws each trial")
        p.trial(1)
        self.assertTrue(torch.equal(first, p.draws[0].tensor), "the same trial seed, the same draws")

    def test_fingerprints_agree_after_the_same_draws(self):
        torch = self.torch
        self.record(5)
        a = draws.rng_fingerprint(torch, None)
        self.record(5)
        self.assertEqual(a, draws.rng_fingerprint(torch, None))
        self.record(6)
        self.assertIsNotNone(draws.fingerprint_note(a, draws.rng_fingerprint(torch, None)))


if __name__ == "__main__":
    unittest.main()
