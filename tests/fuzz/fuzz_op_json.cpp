// op.json: the bounded JSON parse and every key's checks.
#include "fuzz_util.hpp"
#include "kagent/common/error.hpp"
#include "kagent/spec/op.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kagent::parse_op_json(kagent::fuzz::text_of(data, size), "/nonexistent/fuzz/op.json");
  } catch (const kagent::InputError&) {
  }
  return 0;
}
