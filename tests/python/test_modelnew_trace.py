"""tools/kagent_modelnew/trace: the profiler's kernels read back: covered by the timed span or not,
launched by the harness, the solution's call or a stray thread, PyTorch's own ops or the solution's."""

import unittest

from kagent_modelnew.trace import analyze

MAIN, SIDE = 7, 13


class Trace:
    """A synthetic Chrome trace in the layout the worker's profiled samples produce (timer.py)."""

    def __init__(self):
        self.events = []
        self.corr = 0

    def span(self, cat, name, ts, dur, tid=1, **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid, "args": args})

    def kernel(self, name, launch_ts, start, dur, stream=MAIN, tid=1):
        self.corr += 1
        self.span("cuda_runtime", "cudaLaunchKernel", launch_ts, 1, tid=tid, correlation=self.corr)
        self.span("kernel", name, start, dur, tid=0, stream=stream, correlation=self.corr)

    def sample(self, t0, body):
        """prepare + marker A at t0, the call from t0+10 (host) / t0+20 (GPU), marker B after body's end."""
        self.span("user_annotation", "kagent_prepare", t0, 8)
        self.kernel("reduce_kernel<flush>", t0 + 1, t0 + 2, 5)
        self.kernel("at::cuda::spin_kernel(long)", t0 + 7, t0 + 8, 2)
        self.span("user_annotation", "kagent_call", t0 + 10, 10)
        end = body(t0)
        self.span("user_annotation", "kagent_prepare", t0 + 21, 2)
        self.kernel("at::cuda::spin_kernel(long)", t0 + 22, max(end, t0 + 30), 2)

    def json(self):
        return {"traceEvents": self.events}


class TraceAnalysis(unittest.TestCase):
    def test_kernels_on_the_timing_stream_are_covered_and_custom(self):
        t = Trace()

        def body(t0):
            t.kernel("relu_kernel", t0 + 11, t0 + 20, 40)
            return t0 + 60
        for i in range(3):
            t.sample(i * 1000, body)
        a = analyze(t.json(), 3)
        self.assertEqual(a["problem"], "")
        self.assertEqual(a["uncovered"], [])
        self.assertEqual(a["stray"], [])
        self.assertEqual(a["custom_kernels"], 3)
        self.assertEqual(a["torch_us"], 0.0)
        self.assertEqual([k["name"] for k in a["kernels"]], ["relu_kernel"])  # flush and markers left out
        self.assertEqual(a["kernels"][0]["calls"], 3)
        self.assertAlmostEqual(a["kernel_us"], 120.0)
        self.assertEqual(a["off_stream"], 0)

    def test_work_on_a_stream_the_stop_event_does_not_wait_for_is_uncovered(self):
        t = Trace()

        def body(t0):
            t.kernel("gemm_on_side_stream", t0 + 12, t0 + 20, 500, stream=SIDE)
            return t0 + 25  # the timing stream reaches marker B long before the side stream is done
        for i in range(2):
            t.sample(i * 10000, body)
        a = analyze(t.json(), 2)
        self.assertEqual(len(a["uncovered"]), 2)
        self.assertEqual(a["uncovered"][0]["stream"], SIDE)
        self.assertEqual(a["off_stream"], 2)

    def test_a_joined_side_stream_is_covered(self):
        t = Trace()

        def body(t0):
            t.kernel("side_part", t0 + 12, t0 + 20, 30, stream=SIDE)
            return t0 + 55  # the timing stream waited on it: marker B starts after it ends
        t.sample(0, body)
        a = analyze(t.json(), 1)
        self.assertEqual(a["uncovered"], [])
        self.assertEqual(a["off_stream"], 1)

    def test_a_kernel_launched_by_another_thread_after_the_call_is_stray(self):
        t = Trace()

        def body(t0):
            t.kernel("relu_kernel", t0 + 11, t0 + 20, 5)
            t.kernel("late_work", t0 + 40, t0 + 45, 50, stream=SIDE, tid=2)  # after B, not in any call
            return t0 + 26
        t.sample(0, body)
        a = analyze(t.json(), 1)
        self.assertEqual([k["name"] for k in a["stray"]], ["late_work"])

    def test_kernels_launched_inside_an_aten_op_count_as_pytorchs_own(self):
        t = Trace()

        def body(t0):
            t.span("cpu_op", "aten::matmul", t0 + 11, 5)
            t.span("cpu_op", "aten::mm", t0 + 12, 3)
            t.kernel("sm90_xmma_gemm", t0 + 13, t0 + 20, 90)
            t.kernel("my_bias_kernel", t0 + 17, t0 + 110, 10)
            return t0 + 120
        t.sample(0, body)
        a = analyze(t.json(), 1)
        self.assertEqual(a["torch_ops"], {"aten::matmul": 90.0})  # the outermost op names it
        self.assertAlmostEqual(a["torch_share"], 0.9)
        self.assertEqual(a["custom_kernels"], 1)

    def test_missing_markers_are_a_problem_not_a_pass(self):
        a = analyze({"traceEvents": []}, 5)
        self.assertIn("0 marker kernels for 5 samples", a["problem"])


if __name__ == "__main__":
    unittest.main()
