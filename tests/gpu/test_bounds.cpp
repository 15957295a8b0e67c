// Writes outside the buffers (guard bands, seals): one element past the end, one before the start,
// far past the end into the next buffer, into a scratch buffer's band, only after the correctness
// trials, and by a native reference are each caught with a message that names the buffer, the side
// and the offset; honest kernels that write right up to their buffers' ends are never flagged.
// Every test skips, with the reason, on a machine without a GPU.
#include <gtest/gtest.h>

#include "gpu_test.hpp"

using namespace kagent;

namespace {

class Bounds : public test::GpuTest {
 protected:
  EvalReport eval(const std::string& fixture, const std::filesystem::path& op = "") {
    Op o = load_op(op.empty() ? test::examples_dir() / "vector_add/op.json" : op);
    return ev->evaluate(o, load_candidate(test::source_dir() / "tests/gpu/kernels" / fixture));
  }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }
  // A write outside the buffers: failure stage "bounds", tier -1.
  static void expect_bounds_failure(const EvalReport& r) {
    EXPECT_FALSE(r.outcome.correct);
    EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "bounds") << r.outcome.message;
    EXPECT_EQ(r.reward.tier, -1) << r.reward.reason;
  }
};

}  // namespace

TEST_F(Bounds, OnePastTheEndIsCaught) {
  EvalReport r = eval("one_past_end.cu");
  expect_bounds_failure(r);
  const std::string& m = r.outcome.message;
  EXPECT_TRUE(has(m, "candidate wrote outside output 'out'")) << m;
  EXPECT_TRUE(has(m, "4 bytes after its end damaged (first at offset +0 past the end)")) << m;
  EXPECT_TRUE(has(m, "correctness trial 0")) << m;
  EXPECT_FALSE(has(m, "before its start")) << m;
}

TEST_F(Bounds, OneBeforeTheStartIsCaught) {
  EvalReport r = eval("one_before_start.cu");
  expect_bounds_failure(r);
  const std::string& m = r.outcome.message;
  EXPECT_TRUE(has(m, "candidate wrote outside output 'out'")) << m;
  EXPECT_TRUE(has(m, "4 bytes before its start damaged (last at offset -1 before the start)")) << m;
  EXPECT_FALSE(has(m, "after its end")) << m;
}

TEST_F(Bounds, FarPastTheEndIntoTheNextBufferIsCaught) {
  // The store lands two guard bands or more past the lowest buffer's end, in the front band of the
  // buffer above it (see the fixture): which buffer that is depends on the driver's placement.
  EvalReport r = eval("far_past_end.cu");
  expect_bounds_failure(r);
  const std::string& m = r.outcome.message;
  EXPECT_TRUE(has(m, "input 'a'") || has(m, "input 'b'") || has(m, "output 'out'")) << m;
  EXPECT_TRUE(has(m, "4 bytes before its start damaged (last at offset -1 before the start)")) << m;
}

TEST_F(Bounds, ScratchPastTheEndIsCaught) {
  EvalReport r = eval("scratch_past_end.cu");
  expect_bounds_failure(r);
  const std::string& m = r.outcome.message;
  EXPECT_TRUE(has(m, "candidate wrote outside scratch 'tmp' (4000 bytes)")) << m;
  EXPECT_TRUE(has(m, "4 bytes after its end damaged (first at offset +0 past the end)")) << m;
}

TEST_F(Bounds, AStoreThatStartsDuringTheTimingIsCaughtAfterIt) {
  EvalReport r = eval("past_end_after_warmup.cu");
  expect_bounds_failure(r);
  EXPECT_EQ(r.outcome.trials_run, 5) << "the correctness trials were clean";
  EXPECT_TRUE(has(r.outcome.message, "output 'out'")) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "found after the timing")) << r.outcome.message;
}

TEST_F(Bounds, HonestKernelsAreNeverFlagged) {
  // Scratch of odd sizes written to the last byte, float4 stores ending at the buffer's end; and
  // the bundled examples (scalar, float4 with a tail, scratch between launches, bf16).
  EvalReport r = eval("exact_writes.cu");
  EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
  for (auto [cand, op] :
       std::vector<std::pair<std::string, std::string>>{{"vector_add/cand_naive.cu", "vector_add/op.json"},
                                                        {"vector_add/cand_vec4.cu", "vector_add/op.json"},
                                                        {"softmax/cand_scratch.cu", "softmax/op.json"},
                                                        {"softmax/cand_bf16_pipeline.cu", "softmax/op.json"}}) {
    SCOPED_TRACE(cand);
    EvalReport e = ev->evaluate(load_op(test::examples_dir() / op), load_candidate(test::examples_dir() / cand),
                                EvalMode::profile);
    EXPECT_TRUE(e.outcome.correct) << failure_stage_name(e.outcome.failure_stage) << ": " << e.outcome.message;
  }
}

TEST_F(Bounds, AReferenceThatWritesOutsideItsBuffersIsAReferenceFailure) {
  EvalReport r = eval("exact_writes.cu", test::source_dir() / "tests/gpu/ops/ref_past_end/op.json");
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "reference") << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "wrote outside the reference output 'out'")) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "after its end damaged")) << r.outcome.message;
}

TEST_F(Bounds, TheNextEvaluationAfterADamagedBandIsClean) {
  // Bands are filled afresh for every evaluation, so a damaged one does not follow the runner.
  expect_bounds_failure(eval("one_past_end.cu"));
  EvalReport next = ev->evaluate(load_op(test::examples_dir() / "vector_add/op.json"),
                                 load_candidate(test::examples_dir() / "vector_add/cand_naive.cu"));
  EXPECT_TRUE(next.outcome.correct) << failure_stage_name(next.outcome.failure_stage) << ": " << next.outcome.message;
}
