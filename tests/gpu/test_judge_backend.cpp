// The judge's Evaluator-backed backend on a GPU: a candidate given as a file and the same text given
// as source get the same verdict; failing candidates fail their own record (a crash, a hang cut at
// its limit, a wrong result, a compile error, a plan that does not parse) and the next candidate
// on the same backend is judged as it would be alone.
#include <gtest/gtest.h>

#include "kagent/common/files.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/judge/evaluator_backend.hpp"
#include "kagent/judge/verdict.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

class JudgeBackendGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    backend = std::make_unique<judge::EvaluatorBackend>(0, std::make_shared<CompileCache>(cache_dir.path()));
  }
  judge::CandidateRequest request(const std::filesystem::path& file, bool as_text = false) {
    judge::CandidateRequest r;
    r.problem = test::examples_dir() / "vector_add/op.json";
    if (as_text) {
      r.source = read_text_file(file);
      r.name = "sent.cu";
    } else {
      r.file = file;
    }
    r.timeout = std::chrono::seconds(20);
    return r;
  }
  std::string status(const judge::CandidateRequest& r) { return judge::verdict_of(backend->evaluate(r)).status; }

  test::TempDir cache_dir;
  test::ScopedEnv runner{"KAGENT_RUNNER", (test::binary_dir() / "kagent-runner").c_str()};
  std::unique_ptr<judge::EvaluatorBackend> backend;
};

}  // namespace

TEST_F(JudgeBackendGpu, FileAndTextGetTheSameVerdict) {
  EXPECT_EQ(backend->unavailable(), "");
  const auto vec4 = test::examples_dir() / "vector_add/cand_vec4.cu";
  const nlohmann::json from_file = backend->evaluate(request(vec4));
  const nlohmann::json from_text = backend->evaluate(request(vec4, true));
  EXPECT_GT(from_file["tier"].get<int>(), 0) << from_file.dump(2);
  EXPECT_GT(from_text["tier"].get<int>(), 0) << from_text.dump(2);
  EXPECT_EQ(from_file["candidate"], vec4.string());
  EXPECT_EQ(from_text["candidate"], "sent.cu");
  EXPECT_EQ(judge::verdict_of(from_file).status, "correct");
}

TEST_F(JudgeBackendGpu, FailuresStayInTheirOwnRecord) {
  const auto k = test::source_dir() / "tests/gpu/kernels";
  const auto ok = test::examples_dir() / "vector_add/cand_naive.cu";
  // A fault is the candidate's launch failing (stage "launch"): "incorrect", as bench records it; the
  // runner survives it, and the next request is judged as if nothing happened.
  EXPECT_EQ(status(request(k / "illegal_address.cu")), "incorrect");
  EXPECT_EQ(status(request(ok)), "correct");
  auto hang = request(k / "endless_loop.cu");
  hang.timeout = std::chrono::seconds(3);
  EXPECT_EQ(status(hang), "timeout");
  EXPECT_EQ(status(request(ok, true)), "correct");
  EXPECT_EQ(status(request(k / "wrong.cu")), "incorrect");
  EXPECT_EQ(status(request(test::examples_dir() / "vector_add/cand_compile_error.cu")), "compile_error");
  judge::CandidateRequest unparsable = request(ok);
  unparsable.file.clear();
  unparsable.source = "__global__ void k() {}\n/*kagent {\"launch\": [ */\n";
  EXPECT_EQ(status(unparsable), "compile_error");
  EXPECT_EQ(status(request(ok)), "correct");
}
