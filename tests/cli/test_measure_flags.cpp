// The measurement flags and --preset: a preset sets the stopping rule and the knobs, and flags given
// beside it override its values one by one, wherever they stand on the command line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/baselines_file.hpp"
#include "kagent/protocol/measure_preset.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

cli::MeasureFlags parse(std::vector<std::string> args) {
  CLI::App app("test");
  cli::MeasureFlags m;
  cli::add_measure_flags(&app, &m);
  std::vector<std::string> argv = {"test"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  app.parse(static_cast<int>(raw.size()), raw.data());
  return m;
}

}  // namespace

TEST(MeasurePreset, TheDefaultIsTheProtocolsDefaults) {
  const MeasurePreset& d = measure_preset("default");
  EXPECT_EQ(nlohmann::json(d.stop_rule), nlohmann::json(StopRule{}));
  EXPECT_EQ(nlohmann::json(d.knobs), nlohmann::json(MeasureKnobs{}));
  EXPECT_EQ(measure_presets().front().name, "default");
}

TEST(MeasurePreset, TrainingShortensTheTimingAndKeepsEveryCheck) {
  const MeasurePreset& t = measure_preset("training");
  EXPECT_LT(t.stop_rule.min_gpu_s, StopRule{}.min_gpu_s);
  EXPECT_LT(t.knobs.warmup_ms, MeasureKnobs{}.warmup_ms);
  // A lower floor of samples, for operators of milliseconds; what is checked is the default's: the
  // re-check cadence, the CUPTI samples and the 0.5% convergence target.
  EXPECT_LT(t.stop_rule.min_samples, StopRule{}.min_samples);
  EXPECT_GE(t.stop_rule.min_samples, 10);
  EXPECT_EQ(t.knobs.check_every, MeasureKnobs{}.check_every);
  EXPECT_EQ(t.knobs.cupti_samples, MeasureKnobs{}.cupti_samples);
  EXPECT_EQ(t.stop_rule.target_rse, StopRule{}.target_rse);
  EXPECT_LE(t.stop_rule.min_gpu_s, t.stop_rule.max_gpu_s);
  EXPECT_LE(t.stop_rule.min_samples, t.stop_rule.max_samples);
}

TEST(MeasurePreset, AnUnknownNameListsThePresets) {
  try {
    measure_preset("fast");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--preset fast: expected one of default, training"), std::string::npos)
        << e.what();
  }
}

TEST(MeasureFlags, APresetThenTheFlagsBesideIt) {
  const MeasurePreset& t = measure_preset("training");
  cli::MeasureFlags plain = parse({});
  EXPECT_EQ(plain.preset, "default");
  EXPECT_EQ(nlohmann::json(plain.stop_rule), nlohmann::json(StopRule{}));

  cli::MeasureFlags m = parse({"--preset", "training"});
  EXPECT_EQ(m.preset, "training");
  EXPECT_EQ(nlohmann::json(m.stop_rule), nlohmann::json(t.stop_rule));
  EXPECT_EQ(nlohmann::json(m.knobs), nlohmann::json(t.knobs));

  // A flag overrides the preset's value whether it comes before or after --preset.
  for (const auto& args : {std::vector<std::string>{"--min-gpu-s", "0.05", "--preset", "training"},
                           std::vector<std::string>{"--preset", "training", "--min-gpu-s", "0.05"}}) {
    cli::MeasureFlags o = parse(args);
    EXPECT_DOUBLE_EQ(o.stop_rule.min_gpu_s, 0.05);
    EXPECT_DOUBLE_EQ(o.knobs.warmup_ms, t.knobs.warmup_ms);
    EXPECT_EQ(o.stop_rule.max_samples, t.stop_rule.max_samples);
  }
  EXPECT_THROW(parse({"--preset", "fast"}), CLI::ValidationError);
  // The training preset counts each sample's set-up toward its GPU time; --count-setup says otherwise.
  EXPECT_TRUE(m.stop_rule.count_setup);
  EXPECT_FALSE(parse({"--preset", "training", "--count-setup", "false"}).stop_rule.count_setup);
  EXPECT_TRUE(parse({"--count-setup", "true"}).stop_rule.count_setup);
  EXPECT_FALSE(plain.stop_rule.count_setup);
}

TEST(MeasureFlags, BaselinesAreReadWhenParsedAndGoIntoTheOptions) {
  test::TempDir d;
  BaselineEntry e;
  e.key = {"aa", "fp32", false, "NVIDIA H200", "2.11.0", "kagent-ref-baselines-v2"};
  e.eager.median_ms = 1.0;
  BaselinesFile::add(d / "b.json", e);
  const cli::MeasureFlags m = parse({"--baselines", (d / "b.json").string()});
  ASSERT_NE(m.baselines, nullptr);
  EXPECT_EQ(m.baselines->entries().size(), 1u);
  EvalOptions o;
  m.apply(o);
  EXPECT_EQ(o.baselines, m.baselines);
  // A file that cannot be read is a usage error of the flag (exit 2), said before anything runs.
  try {
    parse({"--baselines", (d / "missing.json").string()});
    FAIL() << "no error";
  } catch (const CLI::ValidationError& x) {
    EXPECT_NE(std::string(x.what()).find("missing.json"), std::string::npos) << x.what();
  }
}
