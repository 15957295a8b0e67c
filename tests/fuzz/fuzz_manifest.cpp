// kagent check's manifest (kagent.json).
#include "fuzz_util.hpp"
#include "kagent/check/manifest.hpp"
#include "kagent/common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = kagent::fuzz::scratch_file(kagent::fuzz::text_of(data, size), ".json");
  try {
    kagent::check::load_manifest(path, {});
  } catch (const kagent::InputError&) {
  }
  return 0;
}
