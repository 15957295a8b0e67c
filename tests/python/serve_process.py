"""A real `kagent serve` ($KAGENT_BIN) on 127.0.0.1 with its GPUs hidden (CUDA_VISIBLE_DEVICES=), for
the client's tests: started on a free port, its port read from its first line, stopped with SIGTERM
(exit 0 expected)."""
import os
import re
import subprocess
import time


class ServeProcess:
    def __init__(self, test, tmp, args=()):
        self.test = test
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", KAGENT_CACHE_DIR=os.path.join(tmp, "cache"))
        self.log = open(os.path.join(tmp, "serve.log"), "w+")
        self.p = subprocess.Popen([os.environ["KAGENT_BIN"], "serve", "--problems-root", os.path.join(tmp, "root"),
                                   "--port", "0", *args], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = None
        for _ in range(600):
            self.log.seek(0)
            m = re.search(r"listening on http://[^:]+:(\d+)", self.log.read())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                self.log.seek(0)
                text = self.log.read()
                self.log.close()
                if self.p.returncode == 3 and "built without cpp-httplib" in text:
                    test.skipTest("this kagent was built without cpp-httplib: no kagent serve")
                test.fail(f"kagent serve ended ({self.p.returncode}): {text}")
            time.sleep(0.1)
        test.assertIsNotNone(self.port)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.test.assertEqual(self.p.wait(timeout=30), 0)
        self.log.close()
