// Untrusted code in a problem file or a ModelNew solution reaches no secret: a probe run at import
// looks for the API key in every /proc/*/environ it can read and in its own environment, reads a
// host file, connects to a listener on 127.0.0.1, writes the host's /dev/shm and /tmp, and counts
// the SysV segments it sees; it then raises with what it found, which kagent's error carries.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpu_test.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {
namespace {

namespace fs = std::filesystem;
constexpr const char* kKey = "sk-containment-probe-0123456789";

std::string probe_code(const std::string& secret, int port, const std::string& host_dir, const std::string& tag) {
  return fmt::format(R"~(
import glob, json, os, socket
def _probe():
    f = {{}}
    key = "{key}"
    f["key_in_environ"] = []
    for p in glob.glob("/proc/[0-9]*/environ"):
        try:
            if key.encode() in open(p, "rb").read():
                f["key_in_environ"].append(p)
        except Exception:
            pass
    f["own_env_key"] = any(key in v for v in os.environ.values())
    try:
        f["secret"] = open("{secret}").read()
    except Exception as e:
        f["secret"] = None
    try:
        s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
        s.close()
        f["connect"] = True
    except Exception:
        f["connect"] = False
    for name, path in (("dev_shm_write", "/dev/shm/kagent-probe-{tag}"), ("host_dir_write", "{host_dir}/written-{tag}")):
        try:
            open(path, "w").write("x")
            f[name] = True
        except Exception:
            f[name] = False
    try:
        f["sysv_segments"] = len(open("/proc/sysvipc/shm").read().splitlines()) - 1
    except Exception:
        f["sysv_segments"] = -1
    f["processes"] = len(glob.glob("/proc/[0-9]*"))
    return f
raise RuntimeError("PROBE" + json.dumps(_probe()) + "END")
)~",
                     fmt::arg("key", kKey), fmt::arg("secret", secret), fmt::arg("port", port),
                     fmt::arg("host_dir", host_dir), fmt::arg("tag", tag));
}

class Containment : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    std::string why;
    if (!test::torch_with_gpu(&why)) GTEST_SKIP() << why;
    setenv("OPENAI_API_KEY", kKey, 1);
    setenv("ANTHROPIC_API_KEY", kKey, 1);
    secret = dir.path() / "secret.txt";
    std::ofstream(secret) << "the host's secret";
    listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(listener, 4), 0);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    segment = shmget(0x4b414745, 4096, IPC_CREAT | 0600);
  }
  void TearDown() override {
    unsetenv("OPENAI_API_KEY");
    unsetenv("ANTHROPIC_API_KEY");
    if (listener >= 0) close(listener);
    if (segment >= 0) shmctl(segment, IPC_RMID, nullptr);
  }
  // The probe's findings, from kagent's error message.
  nlohmann::json findings(const std::string& message) {
    auto b = message.find("PROBE");
    auto e = message.find("END", b);
    EXPECT_NE(b, std::string::npos) << message;
    if (b == std::string::npos || e == std::string::npos) return nullptr;
    return nlohmann::json::parse(message.substr(b + 5, e - b - 5), nullptr, false);
  }
  void expect_contained(const nlohmann::json& f, const std::string& tag) {
    ASSERT_TRUE(f.is_object()) << f.dump();
    EXPECT_TRUE(f["key_in_environ"].empty()) << f.dump();
    EXPECT_FALSE(f["own_env_key"].get<bool>()) << f.dump();
    EXPECT_TRUE(f["secret"].is_null()) << f.dump();
    EXPECT_FALSE(f["connect"].get<bool>()) << f.dump();
    EXPECT_EQ(f["sysv_segments"].get<int>(), 0) << "the host's SysV segment is visible: " << f.dump();
    EXPECT_FALSE(fs::exists("/dev/shm/kagent-probe-" + tag)) << "the host's /dev/shm was written";
    EXPECT_FALSE(fs::exists(dir.path() / ("written-" + tag))) << "a host folder was written";
    EXPECT_LE(f["processes"].get<int>(), 8) << "other processes are visible: " << f.dump();
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    EXPECT_LT(accept(listener, reinterpret_cast<sockaddr*>(&peer), &len), 0) << "something connected to 127.0.0.1";
  }

  test::TempDir dir;
  fs::path secret;
  int listener = -1, port = 0, segment = -1;
};

TEST_F(Containment, AProblemFileReachesNoSecret) {
  const fs::path problem = dir.path() / "probe_problem.py";
  std::ofstream(problem) << probe_code(secret.string(), port, dir.path().string(), "problem")
                         << "\nimport torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                            "        return x\ndef get_inputs():\n    return [torch.rand(8)]\n"
                            "def get_init_inputs():\n    return []\n";
  Op op = load_op(problem);
  try {
    ev->evaluate(op, load_candidate(fs::path(KAGENT_SOURCE_DIR_DEFAULT) / "examples/kernelbench/level1/19_ReLU.cu"));
    FAIL() << "the probe problem loaded";
  } catch (const InputError& e) {
    expect_contained(findings(e.what()), "problem");
  }
}

TEST_F(Containment, AModelNewSolutionReachesNoSecret) {
  const fs::path problem = dir.path() / "relu.py";
  std::ofstream(problem) << "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                            "        return torch.relu(x)\ndef get_inputs():\n    return [torch.randn(1024)]\n"
                            "def get_init_inputs():\n    return []\n";
  const fs::path solution = dir.path() / "probe_solution.py";
  std::ofstream(solution) << "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                             "        return x\n"
                          << probe_code(secret.string(), port, dir.path().string(), "solution");
  EvalReport r = ev->evaluate(load_op(problem), load_candidate(solution));
  EXPECT_FALSE(r.outcome.correct);
  const std::string text = r.compile.log + r.outcome.message;
  expect_contained(findings(text), "solution");
  EXPECT_TRUE(r.sandbox_warning.empty()) << r.sandbox_warning;
}

}  // namespace
}  // namespace kagent
