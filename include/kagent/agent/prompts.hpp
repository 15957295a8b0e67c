#pragma once
// The conversation's opening: the system prompt (prompts/system.md plus the skill file
// skills/cuda-optimization/SKILL.md) and the task (prompts/task.md with its {{placeholders}}
// filled in from the operator). Plain files a user can edit; --prompts/--skills override them.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kagent/llm/message.hpp"

namespace kagent::agent {

// $KAGENT_PROMPTS_DIR / $KAGENT_SKILLS_DIR, else the source tree's prompts/ and skills/.
std::filesystem::path default_prompts_dir();
std::filesystem::path default_skills_dir();

// Replaces every {{name}} with values[name]; throws InputError naming the file and the first
// placeholder that has no value (a typo in an edited template must not reach the model).
std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values,
                          const std::string& file);

// [system, user]: system.md + every skills/*/SKILL.md; task.md filled with `values`.
std::vector<llm::Message> opening_messages(const std::filesystem::path& prompts_dir,
                                           const std::filesystem::path& skills_dir,
                                           const std::map<std::string, std::string>& values);

}  // namespace kagent::agent
