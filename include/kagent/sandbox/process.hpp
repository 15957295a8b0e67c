#pragma once
// Running a helper program (nvdisasm, python3, ...) under the sandbox's helper policy, capturing its
// output; finding programs and kagent's own folder.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kagent {

struct ProcessResult {
  bool started = false;  // false when the program could not be executed
  bool timed_out = false;
  int exit_code = -1;  // valid when the process exited normally
  int signal = 0;      // the signal that ended it, if any
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (looked up in PATH) with a wall-clock limit, capturing its output. Never throws
// for a failing child; the result says what happened.
ProcessResult run_capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::string& stdin_data = {});

// Absolute path of a program in PATH, or empty.
std::string find_in_path(const std::string& program);

// Directory of the running executable (for finding kagent-runner beside kagent).
std::string self_dir();

// kagent's data folder `sub` (tools, prompts, skills): PREFIX/share/kagent/SUB for a kagent installed
// as PREFIX/bin/kagent (`make install`, `cmake --install`), else the source tree's it was built from.
std::filesystem::path data_dir(const std::string& sub);

}  // namespace kagent
