// The initialization notes of the task (agent/module_init.hpp): which modules a reference names,
// which notes it gets, every module type of KernelBench accounted for, and every note's checks
// against torch itself (where torch is installed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/agent/module_init.hpp"
#include "kagent/common/files.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::agent;

namespace {

// torch.nn modules KernelBench builds that hold no parameters or buffers of their own at their
// defaults (activations, pooling, dropout, containers, losses): no initialization to state.
const std::set<std::string> kParameterFree = {"Module",
                                              "Sequential",
                                              "ModuleList",
                                              "ModuleDict",
                                              "Parameter",
                                              "ReLU",
                                              "ReLU6",
                                              "GELU",
                                              "Tanh",
                                              "Sigmoid",
                                              "LeakyReLU",
                                              "Hardtanh",
                                              "Hardswish",
                                              "Mish",
                                              "Softmax",
                                              "Identity",
                                              "Dropout",
                                              "MaxPool1d",
                                              "MaxPool2d",
                                              "MaxPool3d",
                                              "AvgPool1d",
                                              "AvgPool2d",
                                              "AvgPool3d",
                                              "AdaptiveAvgPool1d",
                                              "AdaptiveAvgPool2d",
                                              "AdaptiveAvgPool3d",
                                              "TripletMarginLoss",
                                              "TransformerEncoder"};

bool covered(const std::string& module) {
  for (const ModuleInit& e : module_inits())
    for (const std::string& m : e.modules)
      if (m == module) return true;
  return false;
}

}  // namespace

TEST(ModuleInit, ModulesNamedAreTheConstructorsOfTorchNn) {
  const std::string src =
      "import torch.nn as nn\nclass Model(nn.Module):\n  def __init__(self):\n"
      "    self.a = nn.Conv2d(3, 4, 3)\n    self.b = torch.nn.LayerNorm(4)\n    self.c = nn.Conv2d(4, 4, 1)\n"
      "    y = nn.functional.relu(x)\n    z = mynn.Linear(3)\n    nn.init.zeros_(w)\n";
  EXPECT_EQ(modules_named(src), (std::vector<std::string>{"Conv2d", "LayerNorm"}));
}

TEST(ModuleInit, EachReferenceGetsTheNotesOfTheLayersItBuilds) {
  const std::string convt = module_init_notes("self.c = nn.ConvTranspose2d(64, 64, (3, 5))");
  EXPECT_NE(convt.find("fan_in = out_channels/groups x the kernel's elements (not in_channels)"), std::string::npos)
      << convt;
  EXPECT_EQ(convt.find("nn.Linear"), std::string::npos) << convt;

  const std::string mha = module_init_notes("self.attn = nn.MultiheadAttention(embed_dim, num_heads)");
  EXPECT_NE(mha.find("in_proj_weight [3E, E] xavier-uniform in +-sqrt(6 / (E + 3E))"), std::string::npos) << mha;
  EXPECT_NE(mha.find("in_proj_bias 0"), std::string::npos) << mha;

  const std::string inorm = module_init_notes("self.norm = nn.InstanceNorm2d(out_channels)");
  EXPECT_NE(inorm.find("affine=False and track_running_stats=False by default"), std::string::npos) << inorm;

  // A composite brings its parts' notes.
  const std::string layer = module_init_notes("nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h), 6)");
  for (const char* part : {"nn.TransformerEncoderLayer(", "nn.MultiheadAttention(", "nn.Linear(", "nn.LayerNorm("})
    EXPECT_NE(layer.find(part), std::string::npos) << part << " in\n" << layer;
  EXPECT_EQ(module_init_notes("x = torch.relu(x)"), "");
}

// Every module type a KernelBench problem builds has a note, or holds no parameters at its
// defaults. Where the problems are (KAGENT_KERNELBENCH_DIR).
TEST(ModuleInit, EveryModuleTypeKernelBenchBuildsIsAccountedFor) {
  const char* dir = std::getenv("KAGENT_KERNELBENCH_DIR");
  if (!dir || !std::filesystem::is_directory(dir)) GTEST_SKIP() << "KAGENT_KERNELBENCH_DIR is not a folder";
  int files = 0;
  for (const auto& level : std::filesystem::directory_iterator(dir)) {
    if (!level.is_directory() || level.path().filename().string().rfind("level", 0) != 0) continue;
    for (const auto& f : std::filesystem::directory_iterator(level.path())) {
      if (f.path().extension() != ".py") continue;
      ++files;
      for (const std::string& m : modules_named(read_text_file(f.path())))
        EXPECT_TRUE(covered(m) || kParameterFree.count(m)) << "nn." << m << " in " << f.path();
    }
  }
  EXPECT_GT(files, 0);
}

// Each note's checks against torch: the example module built under a fixed seed, and every named
// parameter as the note says (uniform within its bound and reaching 3/4 of it, zeros, ones, or
// absent). A note whose fan_in or distribution is wrong fails here.
TEST(ModuleInit, EveryNoteHoldsForTorchsOwnModules) {
  auto probe = run_capture({"python3", "-c", "import torch"}, std::chrono::seconds(120));
  if (!probe.started || probe.exit_code != 0) GTEST_SKIP() << "python3 with torch is needed: " << probe.output;
  nlohmann::json examples = nlohmann::json::array();
  for (const ModuleInit& e : module_inits()) examples.push_back(e.example);
  const std::string script =
      "import json, sys, torch\n"
      "from torch import nn\n"
      "out = []\n"
      "for ex in json.load(sys.stdin):\n"
      "    torch.manual_seed(0)\n"
      "    m = eval(ex)\n"
      "    out.append({k: {'max_abs': v.abs().max().item(), 'zeros': bool((v == 0).all()),\n"
      "                    'ones': bool((v == 1).all())} for k, v in m.state_dict().items() if "
      "v.is_floating_point()})\n"
      "print(json.dumps(out))\n";
  auto r = run_capture({"python3", "-c", script}, std::chrono::seconds(300), examples.dump());
  ASSERT_TRUE(r.started && r.exit_code == 0) << r.output;
  const auto got = nlohmann::json::parse(r.output);
  ASSERT_EQ(got.size(), module_inits().size());
  for (size_t i = 0; i < module_inits().size(); ++i) {
    const ModuleInit& e = module_inits()[i];
    ASSERT_FALSE(e.checks.empty()) << e.example;
    for (const ParamCheck& c : e.checks) {
      const std::string where = fmt::format("{}: {}", e.example, c.param);
      if (c.kind == ParamCheck::Kind::absent) {
        EXPECT_FALSE(got[i].contains(c.param)) << where << " exists";
        continue;
      }
      ASSERT_TRUE(got[i].contains(c.param)) << where << " missing from " << got[i].dump();
      const auto& p = got[i][c.param];
      switch (c.kind) {
        case ParamCheck::Kind::uniform:
          EXPECT_LE(p["max_abs"].get<double>(), c.bound * (1 + 1e-6)) << where;
          EXPECT_GE(p["max_abs"].get<double>(), 0.75 * c.bound) << where;
          break;
        case ParamCheck::Kind::zeros:
          EXPECT_TRUE(p["zeros"].get<bool>()) << where;
          break;
        case ParamCheck::Kind::ones:
          EXPECT_TRUE(p["ones"].get<bool>()) << where;
          break;
        case ParamCheck::Kind::absent:
          break;
      }
    }
  }
}
