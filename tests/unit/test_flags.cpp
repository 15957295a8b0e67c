// Typed flags: each kind's words exactly as the runner printed them before flags had kinds, the
// JSON round trip (and the plain strings of older results reading as notes), and which CUPTI
// problems make the timing untrusted.
#include <gtest/gtest.h>

#include <cmath>

#include "kagent/protocol/flags.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent {
namespace {

TEST(Flags, TextIsTheOldLine) {
  EXPECT_EQ(flag_text({FlagKind::degenerate_reference, "out", 0, 1e-6, "is all (near) zero (max |ref| = 0)"}),
            "degenerate reference: output 'out' is all (near) zero (max |ref| = 0)");
  EXPECT_EQ(flag_text({FlagKind::degenerate_reference, "y", 3, 0, "is constant (3)"}),
            "degenerate reference: output 'y' is constant (3)");
  EXPECT_EQ(flag_text({FlagKind::weak_reference, "out", 0, 0, "is 97.0% exact zeros"}),
            "weak reference: output 'out' is 97.0% exact zeros");
  EXPECT_EQ(flag_text({FlagKind::timing_untrusted, "", 4, 5, "CUPTI saw 4 launches"}), "cupti: CUPTI saw 4 launches");
  EXPECT_EQ(flag_text({FlagKind::cupti_disagrees, "", 1, 2, "the timed span"}), "cupti: the timed span");
  EXPECT_EQ(flag_text({FlagKind::below_memory_floor, "", 0.00123, 0.0045, "8388608 bytes at 3352 GB/s peak"}),
            "suspicious: median 0.0012 ms is below the memory floor 0.0045 ms (8388608 bytes at 3352 GB/s peak)");
  EXPECT_EQ(flag_text({FlagKind::note, "", 0, 0, "anything at all"}), "anything at all");
}

TEST(Flags, JsonRoundTripsEveryKind) {
  for (FlagKind k :
       {FlagKind::note, FlagKind::degenerate_reference, FlagKind::weak_reference, FlagKind::timing_untrusted,
        FlagKind::cupti_disagrees, FlagKind::below_memory_floor, FlagKind::torch_ops}) {
    const Flag f{k, k == FlagKind::weak_reference ? "out" : "", 1.5, 2.25, "some words"};
    const nlohmann::json j = f;
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j["kind"], std::string(flag_kind_name(k)));  // by name, not by number
    EXPECT_EQ(j["text"], flag_text(f));
    const Flag b = j.get<Flag>();
    EXPECT_EQ(b.kind, k);
    EXPECT_EQ(b.subject, f.subject);
    EXPECT_DOUBLE_EQ(b.value, 1.5);
    EXPECT_DOUBLE_EQ(b.limit, 2.25);
    EXPECT_EQ(b.detail, "some words");
    EXPECT_EQ(flag_text(b), flag_text(f));
  }
  EXPECT_EQ(nlohmann::json(Flag{FlagKind::weak_reference, "out", 0, 0, "w"})["kind"], "weak_reference");
  // A NaN (a reference full of NaN) is null in JSON and NaN again after.
  const nlohmann::json j = Flag{FlagKind::degenerate_reference, "o", NAN, 0, "is constant (nan)"};
  EXPECT_TRUE(j["value"].is_null());
  EXPECT_TRUE(std::isnan(j.get<Flag>().value));
}

TEST(Flags, OlderStringsAndUnknownKindsReadAsNotes) {
  const std::string old = "weak reference: output 'out' is 97.0% exact zeros";
  const Flag f = nlohmann::json(old).get<Flag>();
  EXPECT_EQ(f.kind, FlagKind::note);
  EXPECT_EQ(flag_text(f), old);
  EXPECT_FALSE(untrusts_timing(f));
  const Flag g = nlohmann::json{{"kind", "from_the_future"}, {"text", "a newer kagent's flag"}}.get<Flag>();
  EXPECT_EQ(g.kind, FlagKind::note);
  EXPECT_EQ(flag_text(g), "a newer kagent's flag");
  // An outcome of an older runner or an older results.jsonl: flags as strings.
  EvalOutcome o;
  nlohmann::json j = o;
  j["flags"] = {"cupti: CUPTI saw 4 launches", "suspicious: median 0.0010 ms is below the memory floor"};
  const EvalOutcome back = j.get<EvalOutcome>();
  ASSERT_EQ(back.flags.size(), 2u);
  EXPECT_EQ(back.flags[0].kind, FlagKind::note);
  EXPECT_EQ(flag_text(back.flags[1]), "suspicious: median 0.0010 ms is below the memory floor");
}

CuptiCheck agreeing() {
  CuptiCheck c;
  c.ran = true;
  c.samples = 5;
  c.launches_expected = c.launches_seen = 10;
  c.event_ms = 1.0;
  c.kernel_ms = 0.9;
  return c;
}

TEST(Flags, CuptiUntrustsTheTimingOnlyWhenTheWorkEscapedTheSpan) {
  EXPECT_FALSE(cupti_flag(agreeing()));
  CuptiCheck not_run;
  not_run.not_run = "no libcupti";
  EXPECT_FALSE(cupti_flag(not_run));

  CuptiCheck missing = agreeing();
  missing.launches_seen = 8;
  missing.problem = "CUPTI saw 8 launches of the plan's kernels in 5 samples, expected 10";
  auto f = cupti_flag(missing);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FlagKind::timing_untrusted);
  EXPECT_TRUE(untrusts_timing(*f));
  EXPECT_DOUBLE_EQ(f->value, 8);
  EXPECT_DOUBLE_EQ(f->limit, 10);
  EXPECT_EQ(flag_text(*f), "cupti: " + missing.problem);

  CuptiCheck off = agreeing();
  off.off_stream = 2;
  off.problem = "2 kernel(s) ran outside the runner's stream and context";
  ASSERT_TRUE(cupti_flag(off));
  EXPECT_EQ(cupti_flag(off)->kind, FlagKind::timing_untrusted);

  // Device-launched children finish inside their parent's grid; a short span is a disagreement
  // of durations: both advisory.
  CuptiCheck nested = agreeing();
  nested.other_kernels = 3;
  nested.problem = "3 kernel(s) ran that the plan does not launch (device-launched: child x3)";
  ASSERT_TRUE(cupti_flag(nested));
  EXPECT_EQ(cupti_flag(nested)->kind, FlagKind::cupti_disagrees);
  EXPECT_FALSE(untrusts_timing(*cupti_flag(nested)));
  CuptiCheck short_span = agreeing();
  short_span.event_ms = 0.5;
  short_span.problem = "the timed span (0.5000 ms over 5 samples) is shorter than the kernels CUPTI saw";
  ASSERT_TRUE(cupti_flag(short_span));
  EXPECT_EQ(cupti_flag(short_span)->kind, FlagKind::cupti_disagrees);
  EXPECT_DOUBLE_EQ(cupti_flag(short_span)->value, 0.5);
  EXPECT_DOUBLE_EQ(cupti_flag(short_span)->limit, 0.9);
}

TEST(Flags, TheFirstUntrustingFlagIsFound) {
  const std::vector<Flag> fs = {{FlagKind::weak_reference, "o", 0, 0, "w"},
                                {FlagKind::timing_untrusted, "", 1, 2, "t"}};
  ASSERT_NE(untrusted_timing(fs), nullptr);
  EXPECT_EQ(untrusted_timing(fs)->detail, "t");
  EXPECT_EQ(untrusted_timing({fs[0]}), nullptr);
}

TEST(Flags, TorchOpsWithholdTheSpeedTiersLikeUntrustedTiming) {
  const Flag f{FlagKind::torch_ops, "", 0.97, 0.5, "97% of the kernel time is PyTorch's own operators"};
  EXPECT_TRUE(untrusts_timing(f));
  EXPECT_EQ(flag_text(f), "torch ops: 97% of the kernel time is PyTorch's own operators");
  EXPECT_EQ(flag_kind_from("torch_ops"), FlagKind::torch_ops);
}

}  // namespace
}  // namespace kagent
