#pragma once
// results.jsonl as JUnit XML, so a CI system (GitLab, Jenkins, GitHub test reporters) shows a
// batch as tests: correct passes, incorrect/compile_error/timeout fail, error errs, unsolved is
// skipped.
#include <string>
#include <string_view>
#include <vector>

#include "kagent/report/results.hpp"

namespace kagent::report {

// One <testsuites> with one <testsuite name=suite_name>, one <testcase> per record.
std::string render_junit(const std::vector<ResultRecord>& records, const std::string& suite_name);

// Escapes text for XML 1.0 (and HTML, which accepts the same escapes): & < > " ' become
// references; bytes that are not UTF-8 and characters XML 1.0 forbids (C0 controls other than
// tab, newline and carriage return; U+FFFE, U+FFFF) become U+FFFD, so compiler output with
// colour codes or stray bytes still yields a well-formed file. In an attribute, tab, newline and
// carriage return become character references too, which attribute normalization would
// otherwise turn into spaces.
std::string xml_escape(std::string_view text, bool attribute = false);

}  // namespace kagent::report
