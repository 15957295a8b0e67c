"""tools/kagent_plan: plans written from Python, checked by `kagent compile --op` without a GPU."""

import json
import os
import subprocess
import tempfile
import unittest

from kagent_plan import Plan, PlanError

KERNEL = r'''
extern "C" __global__ void add_relu(const float* a, const float* b, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(a[i] + b[i], 0.f);
}
'''


def resnet_like(blocks, weight_shape=None):
    """A chain of residual blocks (conv-relu, conv, add-relu) on 64 channels: 3 steps and 2 weights each."""
    p = Plan(graph=True)
    act = "x"
    for i in range(blocks):
        h = p.buffer(f"h{i}", "f32", [2, 64, 16, 16])
        c = p.buffer(f"c{i}", "f32", [2, 64, 16, 16])
        p.conv(x=act, w=f"w{i}a", y=h, padding=1, activation="relu", bias=f"b{i}a")
        p.conv(x=h, w=f"w{i}b", y=c, padding=[1, 1])
        out = "out" if i == blocks - 1 else p.buffer(f"a{i}", "f32", [2, 64, 16, 16])
        p.kernel("add_relu", grid=["cdiv(numel(out), 256)"], block=[256], args=[c, act, out, "i64:numel(out)"])
        act = out
    inputs = {"x": {"shape": [2, 64, 16, 16], "dtype": "f32", "init": "randn"}}
    for i in range(blocks):
        for s in "ab":
            inputs[f"w{i}{s}"] = {"shape": weight_shape or [64, 64, 3, 3], "dtype": "f32", "init": "randn"}
        inputs[f"b{i}a"] = {"shape": [64], "dtype": "f32", "init": "randn"}
    op = {"name": "resnet_like", "reference": {"cuda": "ref.cu"}, "inputs": inputs,
          "outputs": {"out": {"shape": [2, 64, 16, 16], "dtype": "f32"}}}
    return p, op


class PlanWriting(unittest.TestCase):
    def test_the_block_is_plain_json_one_step_per_line(self):
        p, _ = resnet_like(2)
        text = p.text()
        self.assertTrue(text.startswith("/*kagent\n{"))
        plan = json.loads(text[len("/*kagent"):text.rindex("*/")])
        self.assertEqual(len(plan["launch"]), 6)
        self.assertTrue(plan["graph"])
        self.assertEqual(plan["launch"][0]["conv"]["activation"], "relu")
        self.assertEqual(text.count('"conv"'), 4)
        self.assertEqual(len([l for l in text.splitlines() if l.startswith('    {')]), 6)

    def test_mistakes_are_refused_naming_the_step(self):
        p = Plan()
        with self.assertRaisesRegex(PlanError, r"launch\[0\]\.gemm\.transb: unknown key"):
            p.gemm(a="x", b="w", d="out", m=1, n=1, k=1, transb=True)
        with self.assertRaisesRegex(PlanError, r"launch\[0\]\.conv\.y: missing"):
            p.conv(x="x", w="w")
        p.buffer("t", "f32", [4])
        with self.assertRaisesRegex(PlanError, "scratch.t: declared twice"):
            p.buffer("t", "f32", [4])
        with self.assertRaisesRegex(PlanError, "scratch.u.dtype"):
            p.buffer("u", "float", [4])


@unittest.skipUnless(os.environ.get("KAGENT_BIN"), "KAGENT_BIN (the kagent binary) is not set")
class PlanCheckedByKagent(unittest.TestCase):
    def compile(self, blocks, weight_shape=None):
        p, op = resnet_like(blocks, weight_shape)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "op.json"), "w") as f:
                json.dump(op, f)
            with open(os.path.join(d, "ref.cu"), "w") as f:
                f.write(KERNEL + '/*kagent {"launch": [{"kernel": "add_relu", "grid": [1], "block": [1], '
                        '"args": ["x", "x", "out", "i64:1"]}]} */\n')
            cand = os.path.join(d, "cand.cu")
            p.write(cand, source=KERNEL)
            return subprocess.run([os.environ["KAGENT_BIN"], "compile", cand, "--op", os.path.join(d, "op.json")],
                                  capture_output=True, text=True, timeout=300)

    def test_a_resnet18_sized_plan_passes_the_plan_checks(self):
        # 20 blocks: 60 steps, 60 scratch buffers, 61 weight tensors, the size of ResNet18's convolutions.
        r = self.compile(20)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_wrong_weight_shape_names_the_step(self):
        r = self.compile(3, weight_shape=[64, 32, 3, 3])
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("launch[0].conv.w: 'w0a' has shape [64, 32, 3, 3]", r.stderr)


if __name__ == "__main__":
    unittest.main()
