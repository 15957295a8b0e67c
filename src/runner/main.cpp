// kagent-runner: the sandboxed GPU evaluator (CUDA driver API). This build answers --version and
// --probe (the GPU inventory as JSON, seen from the child process, so kagent itself never touches
// the driver beyond device queries); loading and evaluating candidates arrives with issue 3.
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/gpu/devices.hpp"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    fmt::print("kagent-runner {}\n", KAGENT_VERSION);
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) {
    kagent::GpuInventory inv = kagent::query_gpus();
    nlohmann::json j = {{"driver_loaded", inv.driver_loaded}, {"driver_version", inv.driver_version},
                        {"problem", inv.problem}, {"gpus", nlohmann::json::array()}};
    for (const auto& g : inv.gpus)
      j["gpus"].push_back({{"index", g.index}, {"name", g.name}, {"cc_major", g.cc_major}, {"cc_minor", g.cc_minor}});
    fmt::print("{}\n", j.dump());
    return inv.gpus.empty() ? 3 : 0;
  }
  fmt::print(stderr, "usage: kagent-runner --version | --probe\n(started by kagent; evaluation requests arrive with issue 3)\n");
  return 2;
}
