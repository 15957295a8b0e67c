// BaselinesFile: baselines shared across machines are added under a key (problem, precision and
// numerics, GPU model, torch version, protocol), replaced in place, read from a file or a folder,
// and refused, naming the field and both values, when measured on another machine or version.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/baselines_file.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

BaselineEntry entry(const std::string& hash, double eager_ms, const std::string& gpu = "NVIDIA H200",
                    const std::string& torch = "2.11.0+cu130") {
  BaselineEntry e;
  e.key = {hash, "fp32", false, gpu, torch, "kagent-ref-baselines-v2"};
  e.problem = hash + ".py";
  e.eager.median_ms = eager_ms;
  e.eager.n = 20;
  TimingSummary c;
  c.median_ms = eager_ms / 2;
  c.n = 20;
  e.compile = c;
  e.cache_key = "k-" + hash;
  return e;
}

std::string message_of(const BaselinesFile& f, const BaselineKey& k) {
  try {
    f.find(k, "level1/19_ReLU.py");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(found)";
}

}  // namespace

TEST(BaselinesFile, AddedEntriesReadBackWithTheirTimesAndKey) {
  test::TempDir d;
  const auto file = d / "sub" / "baselines.json";  // the folder is made
  BaselinesFile::add(file, entry("aa", 1.5));
  BaselineEntry no_compile = entry("bb", 3.0);
  no_compile.compile.reset();
  no_compile.compile_error = "Unsupported: x";
  BaselinesFile::add(file, no_compile);
  const BaselinesFile f = BaselinesFile::read(file);
  ASSERT_EQ(f.entries().size(), 2u);
  const BaselineEntry& a = f.find(entry("aa", 0).key, "a.py");
  EXPECT_DOUBLE_EQ(a.eager.median_ms, 1.5);
  ASSERT_TRUE(a.compile.has_value());
  EXPECT_DOUBLE_EQ(a.compile->median_ms, 0.75);
  EXPECT_EQ(a.cache_key, "k-aa");
  EXPECT_FALSE(a.measured.empty());  // the export's date
  const BaselineEntry& b = f.find(entry("bb", 0).key, "b.py");
  EXPECT_FALSE(b.compile.has_value());
  EXPECT_EQ(b.compile_error, "Unsupported: x");
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp"));
}

TEST(BaselinesFile, AnEntryOfTheSameKeyIsReplacedAnotherMachinesIsKeptBeside) {
  test::TempDir d;
  const auto file = d / "b.json";
  BaselinesFile::add(file, entry("aa", 1.0));
  BaselinesFile::add(file, entry("aa", 2.0));                 // re-measured here: replaced
  BaselinesFile::add(file, entry("aa", 5.0, "NVIDIA H100"));  // another GPU model: beside
  const BaselinesFile f = BaselinesFile::read(file);
  ASSERT_EQ(f.entries().size(), 2u);
  EXPECT_DOUBLE_EQ(f.find(entry("aa", 0).key, "a.py").eager.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(f.find(entry("aa", 0, "NVIDIA H100").key, "a.py").eager.median_ms, 5.0);
}

TEST(BaselinesFile, AnotherGpuTorchPrecisionOrProtocolIsRefusedNamingTheField) {
  test::TempDir d;
  const auto file = d / "b.json";
  BaselinesFile::add(file, entry("aa", 1.0));
  const BaselinesFile f = BaselinesFile::read(file);

  BaselineKey k = entry("aa", 0).key;
  k.gpu_name = "NVIDIA H100 80GB HBM3";
  std::string m = message_of(f, k);
  EXPECT_NE(m.find("gpu_name: the file's 'NVIDIA H200', here 'NVIDIA H100 80GB HBM3'"), std::string::npos) << m;
  EXPECT_NE(m.find(file.string()), std::string::npos) << m;
  EXPECT_NE(m.find("level1/19_ReLU.py"), std::string::npos) << m;

  k = entry("aa", 0).key;
  k.torch = "2.10.0";
  m = message_of(f, k);
  EXPECT_NE(m.find("torch: the file's '2.11.0+cu130', here '2.10.0'"), std::string::npos) << m;
  EXPECT_EQ(m.find("gpu_name"), std::string::npos) << m;  // only what differs

  k = entry("aa", 0).key;
  k.precision = "tf32";
  k.allow_tf32 = true;
  m = message_of(f, k);
  EXPECT_NE(m.find("precision: the file's 'fp32 (TF32 off)', here 'tf32 (TF32 on)'"), std::string::npos) << m;

  k = entry("aa", 0).key;
  k.protocol = "kagent-ref-baselines-v3";
  EXPECT_NE(message_of(f, k).find("protocol"), std::string::npos);

  k = entry("zz", 0).key;  // an edited problem file is another problem
  m = message_of(f, k);
  EXPECT_NE(m.find("no entry for level1/19_ReLU.py (source hash zz"), std::string::npos) << m;
  EXPECT_NE(m.find("--export-baselines"), std::string::npos) << m;
}

TEST(BaselinesFile, AFolderIsReadInNameOrderAndTheFirstEntryOfAKeyIsUsed) {
  test::TempDir d;
  BaselinesFile::add(d / "dir" / "b-node2.json", entry("aa", 9.0));
  BaselinesFile::add(d / "dir" / "b-node2.json", entry("cc", 3.0));
  BaselinesFile::add(d / "dir" / "a-node1.json", entry("aa", 1.0));
  d.write("dir/notes.txt", "not read");
  const BaselinesFile f = BaselinesFile::read(d / "dir");
  ASSERT_EQ(f.entries().size(), 2u);
  EXPECT_DOUBLE_EQ(f.find(entry("aa", 0).key, "a.py").eager.median_ms, 1.0);  // a-node1.json first, on every node
  EXPECT_DOUBLE_EQ(f.find(entry("cc", 0).key, "c.py").eager.median_ms, 3.0);
}

TEST(BaselinesFile, BadFilesAreRefusedNamingTheFile) {
  test::TempDir d;
  auto refused = [](const std::filesystem::path& p) -> std::string {
    try {
      BaselinesFile::read(p);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refused(d / "missing.json").find("missing.json"), std::string::npos);
  const auto not_json = d.write("x.json", "{not json");
  EXPECT_NE(refused(not_json).find("x.json: not JSON"), std::string::npos);
  const auto other = d.write("y.json", R"({"format": "something-else", "entries": []})");
  EXPECT_NE(refused(other).find("not a baselines file"), std::string::npos);
  const auto partial = d.write("z.json", R"({"format": "kagent-baselines-1", "entries": [{"source_hash": "aa"}]})");
  EXPECT_NE(refused(partial).find("z.json: entries[0]"), std::string::npos);
  std::filesystem::create_directories(d / "empty");
  EXPECT_NE(refused(d / "empty").find("no *.json"), std::string::npos);
  // An export into a file of another format is refused too, and leaves it as it was.
  EXPECT_THROW(BaselinesFile::add(other, entry("aa", 1.0)), InputError);
  EXPECT_NE(refused(other).find("not a baselines file"), std::string::npos);
}

TEST(BaselinesFile, ConcurrentExportsLoseNoEntry) {
  test::TempDir d;
  const auto file = d / "b.json";
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) BaselinesFile::add(file, entry(fmt::format("p{}", t * 10 + i), 1.0 + i));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(BaselinesFile::read(file).entries().size(), 40u);
}
