#pragma once
// What a candidate's code became: the SASS of its cubin, disassembled by the toolkit's nvdisasm,
// per kernel, with a summary a model can act on (instruction count, local-memory loads and
// stores, which is where registers spill, and the most frequent opcodes). The harness compiles
// with -lineinfo, so nvdisasm -g puts the candidate's source line beside the instructions.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/compile/options.hpp"

namespace kagent {

struct SassFunction {
  std::string name;
  std::vector<std::string> lines;  // nvdisasm's lines for this function: instructions, labels, line info
  int instructions = 0;
  int local_loads = 0, local_stores = 0;  // LDL / STL: spills, or arrays the compiler put in local memory
  std::map<std::string, int> opcodes;     // base opcode (FFMA, LDG, HMMA, ...) -> count
};

// nvdisasm's program, beside the toolkit whose headers NVRTC uses, else /usr/local/cuda/bin,
// else PATH, else the one Triton's package carries (found through python3); nullopt when there is
// none.
std::optional<std::filesystem::path> find_nvdisasm(const CudaPaths& paths);

// The functions of `nvdisasm -c -g` output, in order of appearance.
std::vector<SassFunction> parse_nvdisasm(std::string_view text);

// Disassembles a cubin (bytes). Throws EnvError when there is no nvdisasm, std::runtime_error
// with nvdisasm's own message when it fails.
std::vector<SassFunction> disassemble(const std::string& cubin, const CudaPaths& paths,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// One paragraph per function: "kernel k: 212 instructions; local memory: 0 loads, 0 stores; most
// frequent: FFMA 64, LDG 8, ...". With `listing`, each function's lines follow, at most
// max_lines of them (the rest counted). `only` restricts to one function (empty: all).
std::string render_sass(const std::vector<SassFunction>& fns, bool listing, const std::string& only = "",
                        size_t max_lines = 400);

}  // namespace kagent
