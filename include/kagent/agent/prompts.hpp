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

// Replaces every {{name}} that `values` has; any other {{...}} is left as it is (system.md and the
// skills are filled this way: a user's skill may hold braces of its own).
std::string fill_known(const std::string& text, const std::map<std::string, std::string>& values);

// [system, user]: system.md + every skills/*/SKILL.md (the skills inline, not as files to read;
// prompts.cpp says why), both filled with fill_known; task.md filled with `values` by fill_template.
std::vector<llm::Message> opening_messages(const std::filesystem::path& prompts_dir,
                                           const std::filesystem::path& skills_dir,
                                           const std::map<std::string, std::string>& values);

}  // namespace kagent::agent
