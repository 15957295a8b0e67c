// kagent.json: entries, defaults under entries, flags under defaults, paths relative to the
// manifest, and an error naming the file and key for everything malformed.
#include <gtest/gtest.h>

#include "kagent/check/manifest.hpp"
#include "kagent/common/error.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::check;

namespace {

class CheckManifest : public ::testing::Test {
 protected:
  test::TempDir t;
  void SetUp() override {
    t.write("repo/ops/softmax/op.json", "{}");
    t.write("repo/kernels/softmax.cu", "");
    t.write("repo/kernels/softmax_v1.cu", "");
    t.write("repo/kernels/relu.cu", "");
  }
  std::string error_of(const std::string& json, const Thresholds& flags = {}) {
    auto p = t.write("repo/kagent.json", json);
    try {
      load_manifest(p, flags);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

}  // namespace

TEST_F(CheckManifest, EntriesDefaultsAndFlagsLayer) {
  auto p = t.write("repo/kagent.json", R"({
  "defaults": {"max_regression": 3, "baseline_ref": "origin/main"},
  "checks": [
    {"name": "softmax", "op": "ops/softmax/op.json", "kernel": "kernels/softmax.cu",
     "min_speedup": 1.1, "vs": "eager", "baseline": "kernels/softmax_v1.cu"},
    {"op": "ops/softmax/op.json", "kernel": "kernels/relu.cu", "max_regression": 0}
  ]
})");
  Thresholds flags;
  flags.min_speedup = 1.0;
  flags.max_regression = 10;
  auto m = load_manifest(p, flags);
  ASSERT_EQ(m.entries.size(), 2u);
  const auto& a = m.entries[0];
  EXPECT_EQ(a.name, "softmax");
  EXPECT_EQ(a.op, (t / "repo/ops/softmax/op.json").lexically_normal());
  EXPECT_EQ(a.kernel.filename(), "softmax.cu");
  EXPECT_DOUBLE_EQ(*a.t.min_speedup, 1.1);  // entry over flag
  EXPECT_EQ(a.t.against(), "eager");
  EXPECT_DOUBLE_EQ(a.t.regression_margin(), 3);  // defaults over flag
  ASSERT_TRUE(a.t.baseline.has_value());         // the entry's file replaces the defaults' ref
  EXPECT_FALSE(a.t.baseline_ref.has_value());
  EXPECT_EQ(a.t.baseline->filename(), "softmax_v1.cu");
  EXPECT_EQ(a.manifest_line, 4);
  const auto& b = m.entries[1];
  EXPECT_EQ(b.name, "relu");                // the kernel's stem
  EXPECT_DOUBLE_EQ(*b.t.min_speedup, 1.0);  // the flag
  EXPECT_EQ(b.t.against(), "compile");
  EXPECT_DOUBLE_EQ(b.t.regression_margin(), 0);
  EXPECT_EQ(*b.t.baseline_ref, "origin/main");
  EXPECT_EQ(b.manifest_line, 6);
}

TEST_F(CheckManifest, ErrorsNameTheFileAndKey) {
  auto has = [](const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; };
  const std::string op = R"("op": "ops/softmax/op.json")", k = R"("kernel": "kernels/softmax.cu")";
  std::string e = error_of("{\"checks\": [{" + op + ", " + k + ", \"min_speedp\": 1}]}");
  EXPECT_TRUE(has(e, "kagent.json: checks[0].min_speedp: unknown key")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k + ", \"vs\": \"torch\"}]}");
  EXPECT_TRUE(has(e, "checks[0].vs: expected \"compile\" or \"eager\"")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k + ", \"max_regression\": \"3%\"}]}");
  EXPECT_TRUE(has(e, "checks[0].max_regression: expected a non-negative number")) << e;
  e = error_of("{\"checks\": [{" + op + "}]}");
  EXPECT_TRUE(has(e, "checks[0].kernel: required")) << e;
  e = error_of("{\"checks\": [{\"op\": \"ops/nope.json\", " + k + "}]}");
  EXPECT_TRUE(has(e, "checks[0].op:") && has(e, "no such file")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k + ", \"baseline\": \"gone.cu\"}]}");
  EXPECT_TRUE(has(e, "checks[0].baseline:") && has(e, "no such file")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k +
               ", \"baseline\": \"kernels/relu.cu\", \"baseline_ref\": \"HEAD\"}]}");
  EXPECT_TRUE(has(e, "not both")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k + "}, {" + op + ", " + k + "}]}");
  EXPECT_TRUE(has(e, "checks[1].name: \"softmax\" is used twice")) << e;
  e = error_of("{\"checks\": []}");
  EXPECT_TRUE(has(e, "checks: expected a non-empty array")) << e;
  e = error_of("{\"checks\": [], \"default\": {}}");
  EXPECT_TRUE(has(e, "default: unknown key")) << e;
  e = error_of("{\"defaults\": {\"kernel\": \"x.cu\"}, \"checks\": [{" + op + ", " + k + "}]}");
  EXPECT_TRUE(has(e, "defaults.kernel: unknown key")) << e;
  e = error_of("{\"checks\": [\n  {" + op + ",\n  " + k + "\n");
  EXPECT_TRUE(has(e, "kagent.json")) << e;  // a parse error names the file (and where)
}

// Hostile manifests (issue 16): bad input naming the key, never an internal error.
TEST_F(CheckManifest, WrongTypesHugeNumbersAndDuplicateKeysNameTheKey) {
  auto has = [](const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; };
  const std::string op = R"("op": "ops/softmax/op.json")", k = R"("kernel": "kernels/softmax.cu")";
  std::string e = error_of("{\"checks\": [{" + op + ", " + k + ", \"name\": 5}]}");
  EXPECT_TRUE(has(e, "kagent.json: checks[0].name: expected a non-empty string, got 5")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k + ", \"min_speedup\": 1e400}]}");
  EXPECT_TRUE(has(e, "kagent.json: key checks[0].min_speedup: number out of range")) << e;
  e = error_of("{\"checks\": [{" + op + ", " + k + ", " + k + "}]}");
  EXPECT_TRUE(has(e, "key checks[0].kernel: duplicate key")) << e;
  e = error_of("{\"checks\": " + std::string(10000, '[') + "}");
  EXPECT_TRUE(has(e, "nested deeper")) << e;
}

// Manifests travel with repositories: a large one is refused before its DOM is built.
TEST_F(CheckManifest, SizeAndValuesAreBounded) {
  auto e = error_of(R"({"checks": [], "pad": ")" + std::string(size_t{2} << 20, ' ') + "\"}");
  EXPECT_NE(e.find("kagent.json"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("1048576 bytes"), std::string::npos) << e.substr(0, 300);
  std::string items;
  for (int i = 0; i < 70'000; ++i) items += "[],";
  e = error_of(R"({"checks": [)" + items + "[]]}");
  EXPECT_NE(e.find("more than 65536 values"), std::string::npos) << e.substr(0, 300);
}
