#include "kagent/agent/prompts.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent::agent {

namespace {

std::filesystem::path from_env_or(const char* var, const char* sub) {
  const char* d = std::getenv(var);
  if (d != nullptr && *d != '\0') return d;
  return data_dir(sub);
}

std::string read_required(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    throw InputError(fmt::format(
        "{}: prompt file not found (--prompts/--skills or KAGENT_PROMPTS_DIR/KAGENT_SKILLS_DIR)", p.string()));
  return read_text_file(p);
}

}  // namespace

std::filesystem::path default_prompts_dir() {
  return from_env_or("KAGENT_PROMPTS_DIR", "prompts");
}
std::filesystem::path default_skills_dir() {
  return from_env_or("KAGENT_SKILLS_DIR", "skills");
}

namespace {

// Replaces each {{name}} that `values` has. Another name goes to `unknown`, which throws
// (fill_template) or returns, and the text is then kept as written (fill_known).
std::string substitute(const std::string& text, const std::map<std::string, std::string>& values,
                       const std::function<void(const std::string& name)>& unknown) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    const std::string name = text.substr(open + 2, close - open - 2);
    auto it = values.find(name);
    if (it == values.end()) {
      unknown(name);
      out += text.substr(pos, open + 2 - pos);
      pos = open + 2;
      continue;
    }
    out += text.substr(pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  return out + text.substr(pos);
}

}  // namespace

std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values,
                          const std::string& file) {
  return substitute(text, values, [&](const std::string& name) {
    std::string known;
    for (const auto& [n, v] : values) known += known.empty() ? n : fmt::format(", {}", n);
    throw InputError(fmt::format("{}: placeholder {{{{{}}}}} has no value (known: {})", file, name, known));
  });
}

// Not ours (a brace in code, a user's own syntax): kept as written.
std::string fill_known(const std::string& text, const std::map<std::string, std::string>& values) {
  return substitute(text, values, [](const std::string&) {});
}

// The skill goes into the system prompt whole, not into a file the model may read_file when it
// thinks of it. It is about 5k tokens: a model that is told to look things up skips them, and
// what it skips (the format's rules, the poisoned outputs, the index-overflow and tail traps) costs
// whole evaluations to rediscover, each far more than the tokens. In the system prompt it is also
// never compacted with old tool results and is sent with the same prefix on every request, which
// providers cache. system.md says so ("follows below"), so the model never looks for a file.
std::vector<llm::Message> opening_messages(const std::filesystem::path& prompts_dir,
                                           const std::filesystem::path& skills_dir,
                                           const std::map<std::string, std::string>& values) {
  std::string system = fill_known(read_required(prompts_dir / "system.md"), values);
  std::vector<std::filesystem::path> skills;
  std::error_code ec;
  if (std::filesystem::is_directory(skills_dir, ec))
    for (const auto& e : std::filesystem::directory_iterator(skills_dir))
      if (std::filesystem::is_regular_file(e.path() / "SKILL.md", ec)) skills.push_back(e.path() / "SKILL.md");
  std::sort(skills.begin(), skills.end());
  for (const auto& s : skills) {
    system += "\n\n";
    system += fill_known(read_text_file(s), values);
  }
  const auto task_path = prompts_dir / "task.md";
  std::string task = fill_template(read_required(task_path), values, task_path.string());
  return {{llm::Role::system, system, {}, "", "", false}, {llm::Role::user, task, {}, "", "", false}};
}

}  // namespace kagent::agent
