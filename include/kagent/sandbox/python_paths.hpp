#pragma once
// What python3 needs to run with its packages inside a private file system view: the prefixes of
// the interpreter found in PATH (a virtualenv's and the base install's), every existing sys.path
// entry, and the user site-packages directory when it exists (a `pip install --user` torch), but
// never a home directory itself. Asked once per process from the interpreter (a trusted run: no
// problem or solution file is involved) and cached.
#include <string>
#include <vector>

namespace kagent::sandbox {

// Absolute, existing directories; empty when python3 is missing or fails (the child then fails to
// start with its own message).
const std::vector<std::string>& python_install_paths();

// The interpreter itself (sys.executable): what a jailed child executes instead of "python3",
// which may be a launcher the view does not hold (pyenv's shims in a home directory run bash and
// pyenv first). Empty when python3 is missing.
const std::string& python_executable();

// The directories from a JSON text of the form {"paths": [...]} (the interpreter's answer), for tests.
std::vector<std::string> python_paths_from_json(const std::string& text);

}  // namespace kagent::sandbox
