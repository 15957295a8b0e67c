#pragma once
// Errors carry the exit code they map to, so every exit path of the CLI is documented in one
// place (ExitCode) and no caller has to guess how a failure should end the process.
#include <stdexcept>
#include <string>

namespace kagent {

enum class ExitCode : int {
  ok = 0,           // success
  failed = 1,       // the candidate or the gate failed (compile error, wrong result, regression)
  bad_input = 2,    // bad input or usage: malformed file, unknown key, bad option
  environment = 3,  // environment missing: no GPU, no endpoint, no Python/torch
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input: the message names the file, the line or JSON key, and what was expected.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(ExitCode::bad_input, message) {}
};

// Something the environment lacks: no GPU, no driver, no python3/torch, no endpoint.
class EnvError : public Error {
 public:
  explicit EnvError(const std::string& message) : Error(ExitCode::environment, message) {}
};

// The GPU is busy with other work (another process held the memory an evaluation ran out of): the
// evaluation is not judged; trying again later may succeed (bench retries it).
class GpuBusyError : public EnvError {
 public:
  using EnvError::EnvError;
};

}  // namespace kagent
