"""The reference server's timed requests around their measurement (tools/kagent_ref/server.py): a
request before load or without a GPU is an error saying so; the baselines and the library times are
each cached under their own folder and key, a second request reads the cache (cached: true), and
--refresh measures again. torch is not needed: a stand-in module plays the calls the server makes
(one without TorchDispatchMode, so the library times come back as a note), and a stand-in problem
counts how often its inputs are remade."""

import json
import os
import sys
import tempfile
import types
import unittest


class FakeCuda:
    def __init__(self, available):
        self.available = available

    def is_available(self):
        return self.available

    def get_device_name(self, device=None):
        return "Fake GPU"

    def get_device_properties(self, device):
        return types.SimpleNamespace(L2_cache_size=1 << 20)

    def synchronize(self):
        pass

    def empty_cache(self):
        pass


def fake_torch(gpu=True):
    t = types.ModuleType("torch")
    t.__version__ = "0.0-fake"
    t.cuda = FakeCuda(gpu)
    t.int32 = "int32"
    t.zeros = lambda n, dtype=None, device=None: types.SimpleNamespace(sum=lambda: 0)
    t.utils = types.ModuleType("torch.utils")  # no _python_dispatch: the library times become a note
    return t


class FakeProblem:
    source_hash = "abc"
    precision = "fp32"
    device = "cuda:0"

    def __init__(self):
        self.inputs_made = 0

    def pin_numerics(self):
        return {"allow_tf32": False, "matmul_allow_tf32": False, "cudnn_allow_tf32": False}

    def inputs(self, seed):
        self.inputs_made += 1
        return ["x"]

    def call(self, model, args):
        return None


class TimedRequests(unittest.TestCase):
    def setUp(self):
        self.saved = {k: sys.modules.get(k) for k in ("torch", "torch.utils", "kagent_ref.timing")}
        sys.modules["torch"] = fake_torch()
        sys.modules["torch.utils"] = sys.modules["torch"].utils
        sys.modules.pop("kagent_ref.timing", None)  # imports torch: the stand-in's
        from kagent_ref import server
        self.server_mod = server
        self.cache = tempfile.mkdtemp(prefix="kagent-ref-cache-")

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    def loaded(self):
        s = self.server_mod.Server(out=None)
        s.problem = FakeProblem()
        return s

    def test_before_load_and_without_a_gpu(self):
        s = self.server_mod.Server(out=None)
        with self.assertRaisesRegex(RuntimeError, "library_times before load"):
            s.library_times({"cache_dir": self.cache})
        with self.assertRaisesRegex(RuntimeError, "baselines before load"):
            s.baselines({"cache_dir": self.cache})
        sys.modules["torch"].cuda.available = False
        s = self.loaded()
        with self.assertRaisesRegex(RuntimeError, "torch sees no GPU: library timings need one"):
            s.library_times({"cache_dir": self.cache})

    def test_library_times_are_measured_cached_and_refreshed(self):
        s = self.loaded()
        first = s.library_times({"cache_dir": self.cache})
        self.assertFalse(first["cached"])
        self.assertEqual(first["calls"], [])
        self.assertIn("TorchDispatchMode", first["note"])
        self.assertEqual(s.problem.inputs_made, 1, "inputs remade after a release")
        path = os.path.join(self.cache, "library_times", first["key"] + ".json")
        self.assertTrue(os.path.exists(path))
        again = s.library_times({"cache_dir": self.cache})
        self.assertTrue(again["cached"])
        self.assertEqual(again["key"], first["key"])
        self.assertFalse(s.library_times({"cache_dir": self.cache, "refresh": True})["cached"])

    def test_baselines_read_their_own_cache_with_the_protocol(self):
        s = self.loaded()
        lib = s.library_times({"cache_dir": self.cache})
        # What a server wrote earlier under the baselines' key: read back, not measured.
        p, _, key, path, cached = s._timed({"cache_dir": self.cache}, self.server_mod.PROTOCOL, "baselines", None,
                                           "baselines")
        self.assertIsNone(cached)
        self.assertNotEqual(key, lib["key"], "the two measurements have keys of their own")
        self.assertEqual(os.path.dirname(path), os.path.join(self.cache, "baselines"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"eager": {"median_ms": 1.0}, "compile": None, "key": key}, f)
        b = s.baselines({"cache_dir": self.cache})
        self.assertTrue(b["cached"])
        self.assertEqual(b["protocol"], self.server_mod.PROTOCOL)
        self.assertEqual(b["eager"]["median_ms"], 1.0)


if __name__ == "__main__":
    unittest.main()
