#include "kagent/spec/candidate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/spec/option_allowlist.hpp"
#include "library_step_parse.hpp"
#include "plan_json.hpp"
#include "text_util.hpp"

namespace kagent {

namespace {

using spec_detail::is_identifier;
using spec_detail::PlanJson;
using spec_detail::show;
using Json = spec_detail::PlanJsonValue;

constexpr std::string_view kPlanStart = "/*kagent";
constexpr std::string_view kPlanEnd = "*/";

struct ScalarTypeInfo {
  ScalarType type;
  std::string_view name;
  size_t size;
};

constexpr std::array<ScalarTypeInfo, 5> kScalarTypes = {{
    {ScalarType::i32, "i32", 4},
    {ScalarType::i64, "i64", 8},
    {ScalarType::u32, "u32", 4},
    {ScalarType::f32, "f32", 4},
    {ScalarType::f64, "f64", 8},
}};

// Where the plan sits in the file.
struct PlanBlock {
  size_t json_begin = 0;  // just after "/*kagent"
  size_t json_end = 0;    // at "*/"
  int line = 0;           // of "/*kagent"
};

PlanBlock find_plan_block(const std::string& source, const std::string& path) {
  size_t start = source.find(kPlanStart);
  if (start == std::string::npos) {
    throw InputError(
        fmt::format("{}: no launch plan: expected a /*kagent {{ ... }} */ comment block (see docs/candidate.md)", path));
  }
  PlanBlock block;
  block.line = line_of_offset(source, start);
  block.json_begin = start + kPlanStart.size();
  block.json_end = source.find(kPlanEnd, block.json_begin);
  if (block.json_end == std::string::npos) {
    throw InputError(
        fmt::format("{}:{}: the launch plan block /*kagent is not terminated: expected '*/'", path, block.line));
  }
  size_t second = source.find(kPlanStart, block.json_end + kPlanEnd.size());
  if (second != std::string::npos) {
    throw InputError(
        fmt::format("{}: two launch plans (/*kagent blocks) at lines {} and {}: a candidate has exactly one", path,
                    block.line, line_of_offset(source, second)));
  }
  return block;
}

// Reports errors as "<path>:<plan line>: plan key <key>: <what>" (plan_json.hpp).
class PlanParser : public PlanJson {
 public:
  using PlanJson::PlanJson;

  LaunchPlan parse(const Json& root) const {
    if (!root.is_object()) {
      throw InputError(
          fmt::format("{}:{}: the launch plan must be a JSON object, got {}", path_, line_, root.type_name()));
    }
    LaunchPlan plan;
    for (const auto& item : root.items()) {
      const std::string& key = item.key();
      if (key == "scratch") {
        plan.scratch = parse_scratch(item.value());
      } else if (key == "launch") {
        plan.launches = parse_launches(item.value());
      } else if (key == "options") {
        plan.options = parse_options(item.value());
      } else if (key == "graph") {
        if (!item.value().is_boolean()) fail(key, fmt::format("expected true or false, got {}", show(item.value())));
        plan.graph = item.value().get<bool>();
      } else {
        fail(key, "unknown key (allowed: scratch, launch, options, graph)");
      }
    }
    if (!root.contains("launch")) fail("launch", "missing: a plan needs at least one launch");
    return plan;
  }

 private:
  std::vector<ScratchBuffer> parse_scratch(const Json& v) const {
    if (!v.is_object())
      fail("scratch", fmt::format("expected an object name -> {{dtype, shape}}, got {}", v.type_name()));
    std::vector<ScratchBuffer> buffers;
    for (const auto& item : v.items()) {
      std::string key = "scratch." + item.key();
      if (!is_identifier(item.key()))
        fail(key, "a scratch buffer's name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
      for (const auto& other : buffers) {
        if (other.name == item.key()) fail(key, "duplicate scratch buffer name");
      }
      buffers.push_back(parse_scratch_buffer(item.key(), item.value(), key));
    }
    return buffers;
  }

  ScratchBuffer parse_scratch_buffer(const std::string& name, const Json& v, const std::string& key) const {
    if (!v.is_object())
      fail(key, fmt::format("expected an object {{\"dtype\": ..., \"shape\": [...]}}, got {}", show(v)));
    for (const auto& item : v.items()) {
      if (item.key() != "dtype" && item.key() != "shape")
        fail(key + "." + item.key(), "unknown key (allowed: dtype, shape)");
    }
    ScratchBuffer buffer;
    buffer.name = name;
    if (!v.contains("dtype")) fail(key + ".dtype", fmt::format("missing (expected one of {})", dtype_choices()));
    const Json& dtype = v.at("dtype");
    auto parsed = dtype.is_string() ? parse_dtype(dtype.get<std::string>()) : std::nullopt;
    if (!parsed) fail(key + ".dtype", fmt::format("expected one of {}, got {}", dtype_choices(), show(dtype)));
    buffer.dtype = *parsed;
    if (!v.contains("shape")) fail(key + ".shape", "missing (expected a non-empty array of integers or expressions)");
    buffer.shape = dims(v.at("shape"), key + ".shape", std::numeric_limits<size_t>::max(), 1);
    return buffer;
  }

  std::vector<Launch> parse_launches(const Json& v) const {
    if (!v.is_array() || v.empty()) {
      fail("launch", fmt::format("expected a non-empty array of launches, got {}",
                                 v.is_array() ? std::string("an empty array") : std::string(v.type_name())));
    }
    std::vector<Launch> launches;
    for (size_t i = 0; i < v.size(); ++i) launches.push_back(parse_launch(v[i], fmt::format("launch[{}]", i)));
    return launches;
  }

  Launch parse_launch(const Json& v, const std::string& key) const {
    if (!v.is_object())
      fail(key, fmt::format("expected an object {{kernel, grid, block, smem, args}} or a library step {{\"gemm\": "
                            "{{...}}}} / {{\"conv\": {{...}}}}, got {}",
                            show(v)));
    if (v.contains("gemm") || v.contains("conv")) return parse_library_step(*this, v, key);
    for (const auto& item : v.items()) {
      const std::string& k = item.key();
      if (k != "kernel" && k != "grid" && k != "block" && k != "smem" && k != "args") {
        fail(key + "." + k, "unknown key (allowed: kernel, grid, block, smem, args; or one library step: gemm, conv)");
      }
    }
    for (const char* required : {"kernel", "grid", "block", "args"}) {
      if (!v.contains(required)) fail(key + "." + required, "missing (a launch needs kernel, grid, block and args)");
    }
    Launch launch;
    const Json& kernel = v.at("kernel");
    if (!kernel.is_string() || !is_identifier(kernel.get<std::string>())) {
      fail(key + ".kernel",
           fmt::format("expected the name of an extern \"C\" __global__ function, got {}", show(kernel)));
    }
    launch.kernel = kernel.get<std::string>();
    launch.grid = dims(v.at("grid"), key + ".grid", 3, 1);
    launch.block = dims(v.at("block"), key + ".block", 3, 1);
    if (v.contains("smem")) launch.smem = expr_item(v.at("smem"), key + ".smem", 0);
    launch.args = parse_args(v.at("args"), key + ".args");
    return launch;
  }

  std::vector<PlanArg> parse_args(const Json& v, const std::string& key) const {
    if (!v.is_array()) fail(key, fmt::format("expected an array of strings, got {}", v.type_name()));
    std::vector<PlanArg> args;
    for (size_t i = 0; i < v.size(); ++i) args.push_back(parse_arg(v[i], fmt::format("{}[{}]", key, i)));
    return args;
  }

  // "name" passes a tensor's device pointer; "type:expression" passes a scalar by value.
  PlanArg parse_arg(const Json& v, const std::string& key) const {
    if (!v.is_string()) fail(key, fmt::format("expected a tensor name or \"type:expression\", got {}", show(v)));
    PlanArg arg;
    arg.text = v.get<std::string>();
    if (is_identifier(arg.text)) {
      arg.is_tensor = true;
      arg.tensor = arg.text;
      return arg;
    }
    size_t colon = arg.text.find(':');
    if (colon == std::string::npos) {
      fail(key, fmt::format("'{}' is neither a tensor name nor a scalar \"type:expression\" (e.g. \"i32:numel(x)\")",
                            arg.text));
    }
    std::string type = arg.text.substr(0, colon);
    auto found = std::find_if(kScalarTypes.begin(), kScalarTypes.end(), [&](const auto& t) { return t.name == type; });
    if (found == kScalarTypes.end()) {
      fail(key, fmt::format("'{}' has unknown scalar type '{}' (expected i32, i64, u32, f32, f64)", arg.text, type));
    }
    arg.is_tensor = false;
    arg.scalar_type = found->type;
    arg.value = expr_text(arg.text.substr(colon + 1), key);
    return arg;
  }

  std::vector<std::string> parse_options(const Json& v) const {
    if (!v.is_array()) fail("options", fmt::format("expected an array of strings, got {}", v.type_name()));
    std::vector<std::string> options;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string key = fmt::format("options[{}]", i);
      if (!v[i].is_string()) fail(key, fmt::format("expected a string, got {}", show(v[i])));
      std::string option = v[i].get<std::string>();
      check_candidate_option(option, where(key));
      options.push_back(option);
    }
    return options;
  }
};

}  // namespace

std::string_view scalar_type_name(ScalarType t) {
  for (const auto& entry : kScalarTypes) {
    if (entry.type == t) return entry.name;
  }
  return "?";
}

size_t scalar_type_size(ScalarType t) {
  for (const auto& entry : kScalarTypes) {
    if (entry.type == t) return entry.size;
  }
  return 0;
}

void check_candidate_option(const std::string& option, const std::string& where) {
  check_option_allowed(option, where);  // an allowlist: spec/option_allowlist.cpp
}

Candidate parse_plan_candidate(std::string source, const std::filesystem::path& path) {
  const std::string path_text = path.string();
  PlanBlock block = find_plan_block(source, path_text);
  std::string_view json_text(source.data() + block.json_begin, block.json_end - block.json_begin);
  // Bounded before anything is allocated for it: the DOM costs up to 50 times the text.
  if (json_text.size() > kMaxPlanBytes)
    throw InputError(fmt::format(
        "{}:{}: the launch plan is {} bytes: at most {} bytes (1 MiB) are read (a plan of thousands of steps "
        "fits)",
        path_text, block.line, json_text.size(), kMaxPlanBytes));
  JsonLimits limits;
  limits.max_values = kMaxPlanValues;
  Json root;
  try {
    root = parse_json<Json>(json_text, limits);
  } catch (const JsonTextError& e) {
    if (e.byte() == std::string::npos)
      throw InputError(fmt::format("{}:{}: plan key {}: {}", path_text, block.line,
                                   e.path().empty() ? "(top)" : e.path(), e.what()));
    // Map the offset back into the file to name the real line.
    size_t offset = std::min(block.json_begin + e.byte(), block.json_end);
    throw InputError(
        fmt::format("{}:{}: launch plan is not valid JSON: {}", path_text, line_of_offset(source, offset), e.what()));
  }
  Candidate cand;
  cand.path = path;
  cand.plan_line = block.line;
  cand.plan = PlanParser(path_text, block.line).parse(root);
  cand.source = std::move(source);
  return cand;
}

}  // namespace kagent
