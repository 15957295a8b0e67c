// results.jsonl as kagent report reads it, then the summary and the HTML page drawn from it.
#include "fuzz_util.hpp"
#include "kagent/common/error.hpp"
#include "kagent/report/html.hpp"
#include "kagent/report/results.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = kagent::fuzz::scratch_file(kagent::fuzz::text_of(data, size), ".jsonl");
  try {
    auto records = kagent::report::read_results({path});
    auto summary = kagent::report::summarize(records);
    kagent::report::render_summary(summary, true);
    kagent::report::render_html(records, summary, "fuzz");
  } catch (const kagent::InputError&) {
  }
  return 0;
}
