#pragma once
// The results of a batch as one self-contained HTML page (`kagent report --html`): the summary
// table, a per-problem speedup chart, the tier distribution per level, the best speedup against
// the agent's turn (agent runs), and a per-problem table. Inline CSS and SVG only, no script and
// nothing fetched, so the file can be attached to a CI job or mailed and still opens anywhere.
#include <string>
#include <vector>

#include "kagent/report/results.hpp"

namespace kagent::report {

// summary is summarize(records) (passed in so the caller computes it once for every output).
std::string render_html(const std::vector<ResultRecord>& records, const std::vector<Summary>& summary,
                        const std::string& title);

}  // namespace kagent::report
