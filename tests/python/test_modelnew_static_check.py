"""tools/kagent_modelnew/static_check: what a ModelNew file is built with and what looks like a hack."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from kagent_modelnew.static_check import check_source

LOAD_INLINE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    source = "..."
    relu_ext = load_inline(name="relu_ext", cpp_sources="", cuda_sources=source, functions=["relu"])

    class ModelNew(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.gemm = nn.Linear(in_features, out_features)   # holds the weights only
            self.ext = relu_ext

        def forward(self, x):
            y = relu_ext.relu(x)
            return self.ext.relu(y)
''')

TRITON = textwrap.dedent('''
    import torch, triton
    import triton.language as tl

    @triton.jit
    def add_kernel(a, b, out, n, BLOCK: tl.constexpr):
        pass

    class ModelNew(torch.nn.Module):
        def forward(self, a, b):
            out = torch.empty_like(a)
            add_kernel[(1,)](a, b, out, a.numel(), BLOCK=1024)
            return out
''')


def kinds(report):
    return sorted({f["kind"] for f in report["findings"]})


class StaticCheck(unittest.TestCase):
    def test_an_honest_load_inline_solution_has_no_findings(self):
        r = check_source(LOAD_INLINE)
        self.assertTrue(r["modelnew"])
        self.assertEqual(r["backends"], ["cuda"])
        self.assertEqual(r["findings"], [])

    def test_an_honest_triton_solution_has_no_findings(self):
        r = check_source(TRITON)
        self.assertEqual(r["backends"], ["triton"])
        self.assertEqual(r["findings"], [])

    def test_pytorch_ops_and_layers_called_in_forward_are_named(self):
        src = LOAD_INLINE.replace("y = relu_ext.relu(x)",
                                  "y = torch.matmul(x, x) + F.gelu(x) + x @ x + self.gemm(x) + x.softmax(-1)")
        r = check_source(src)
        texts = " | ".join(f["text"] for f in r["findings"] if f["kind"] == "torch_op")
        for part in ("torch.matmul()", "F.gelu()", "'@'", "self.gemm(...)", "nn.Linear", "x.softmax()"):
            self.assertIn(part, texts)

    def test_hacks_are_flagged_by_kind(self):
        src = LOAD_INLINE.replace("y = relu_ext.relu(x)", textwrap.indent(textwrap.dedent('''
            torch.cuda.synchronize = lambda: None
            setattr(torch.cuda, "Event", object)
            s = torch.cuda.Stream()
            try:
                y = relu_ext.relu(x)
            except Exception:
                y = Model(1, 2)(x)
            self.cached = y'''), "        ").strip())
        self.assertEqual(kinds(check_source(src)),
                         ["caching", "fallback", "reference_model", "side_stream", "tampering"])

    def test_the_extensions_own_stream_and_aten_ops_are_named(self):
        # As KernelBench's adversarial non_default_stream_kernel.py does: the hack sits in the C++.
        cpp = ('"""\n#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor a, torch::Tensor b) {\n'
               '  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n'
               '  return torch::matmul(a, b);\n}\n"""')
        r = check_source(LOAD_INLINE.replace('source = "..."', "source = " + cpp))
        texts = [f["text"] for f in r["findings"]]
        self.assertEqual(kinds(r), ["side_stream", "torch_op"])
        self.assertTrue(any(t.startswith("cudaStreamCreateWithFlags in the extension's source") for t in texts))
        self.assertTrue(any(t.startswith("torch::matmul in the extension's source") for t in texts))

    def test_no_backend_and_no_modelnew(self):
        r = check_source("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
        self.assertEqual(kinds(r), ["no_kernel"])
        self.assertFalse(check_source("class Model: pass\n")["modelnew"])

    def test_the_command_exits_2_without_modelnew_or_on_bad_syntax(self):
        env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        with tempfile.TemporaryDirectory() as d:
            for name, text, code, said in (("ok.py", TRITON, 0, ""), ("none.py", "x = 1\n", 2, "defines no ModelNew"),
                                           ("bad.py", "def (:\n", 2, "not valid Python")):
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(text)
                r = subprocess.run([sys.executable, "-m", "kagent_modelnew.static_check", path], env=env,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertIn(said, r.stderr)


if __name__ == "__main__":
    unittest.main()
