// A model's tool-call arguments: the bounded parse the providers use, then the tools' argument
// readers on the object.
#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/model_tools/tool.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json args;
  try {
    args = kagent::parse_json<nlohmann::json>(kagent::fuzz::text_of(data, size));
  } catch (const kagent::JsonTextError&) {
    return 0;
  }
  for (const char* name : {"path", "command", "timeout_s", "old", "new"}) {
    try {
      kagent::model_tools::arg_string(args, name);
    } catch (const kagent::model_tools::ToolError&) {
    }
    try {
      kagent::model_tools::arg_int(args, name, 1, 600);
    } catch (const kagent::model_tools::ToolError&) {
    }
  }
  args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
