"""tools/kagent_modelnew/worker.py's "build" request (building a solution ahead, without the GPU):
it only imports the solution, reports a compiler's failure as a build error, and is refused in a
worker that has loaded a solution for evaluation. Needs no torch: these solutions import nothing."""

import os
import tempfile
import textwrap
import unittest

from kagent_modelnew import worker


class BuildAhead(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def solution(self, text):
        path = os.path.join(self.dir.name, "solution.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_imports_the_solution_only(self):
        marker = os.path.join(self.dir.name, "imported")
        path = self.solution(f'''
            open({marker!r}, "w").close()   # what the import builds (load_inline, Triton) happens here

            class ModelNew:
                def __init__(self):
                    raise AssertionError("never built ahead: the model is made by the evaluation")
        ''')
        reply = worker.Worker().build({"solution": path})
        self.assertTrue(os.path.exists(marker))
        self.assertGreaterEqual(reply["build_s"], 0.0)

    def test_a_compiler_failure_is_a_build_error(self):
        path = self.solution('''
            import subprocess
            raise subprocess.CalledProcessError(1, ["ninja", "-v"])
        ''')
        with self.assertRaises(worker.BuildError):
            worker.Worker().build({"solution": path})

    def test_other_failures_are_raised_as_they_are(self):
        path = self.solution('''
            raise RuntimeError("CUDA is not available")   # a solution that needs the GPU at import
        ''')
        with self.assertRaises(RuntimeError) as e:
            worker.Worker().build({"solution": path})
        self.assertNotIsInstance(e.exception, worker.BuildError)

    def test_not_after_a_load(self):
        w = worker.Worker()
        w.model = object()  # what load() leaves
        with self.assertRaises(RuntimeError):
            w.build({"solution": self.solution("class ModelNew: pass\n")})


if __name__ == "__main__":
    unittest.main()
