#pragma once
// The problems a service evaluates against live under one folder (--problems-root); a request
// names one relative to it, and nothing outside it can be reached: not by "..", an absolute path,
// or a symlink that leads out.
#include <filesystem>
#include <string>

namespace kagent::serve {

// `name` as a request gives it ("field" names it in errors):
//  - a KernelBench id "level1/19": the one file level1/19_*.py under the root;
//  - "level1/19_ReLU" (the .py added) or "level1/19_ReLU.py";
//  - a path to an op.json or .py problem file, or a folder holding op.json.
// Throws serve::RequestError naming the field: 400 for a path that leaves the root (absolute, "..",
// a symlink out) or an id that matches two files, 404 for no such problem.
std::filesystem::path resolve_problem(const std::filesystem::path& root, const std::string& name,
                                      const std::string& field = "problem");

}  // namespace kagent::serve
