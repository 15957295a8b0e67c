#include "suggest.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kagent::cli {

int edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: Levenshtein plus the swap of two adjacent letters ("optimze").
  std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& names) {
  std::string best;
  int best_d = 3;
  for (const std::string& n : names) {
    const int d = edit_distance(typed, n);
    if (d < best_d && 2 * d < static_cast<int>(std::max(typed.size(), n.size()))) {
      best = n;
      best_d = d;
    }
  }
  return best;
}

namespace {

std::vector<std::string> long_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back(n);
  return names;
}

}  // namespace

std::string usage_suggestions(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> subcommands;
  for (const CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) subcommands.push_back(s->get_name());
  // The first word that is not an option is the subcommand.
  auto first = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.rfind('-', 0) != 0; });
  if (first == args.end()) return "";
  if (std::find(subcommands.begin(), subcommands.end(), *first) == subcommands.end()) {
    const std::string near = nearest_name(*first, subcommands);
    return near.empty() ? ""
                        : fmt::format("kagent: '{}' is not a subcommand; did you mean 'kagent {}'?\n", *first, near);
  }
  CLI::App* sub = app.get_subcommand(*first);
  std::vector<std::string> names = long_names(*sub);
  for (const std::string& n : long_names(app)) names.push_back(n);  // --verbose, --version
  std::string out;
  for (auto it = std::next(first); it != args.end(); ++it) {
    if (*it == "--") break;  // what follows is not options
    if (it->rfind("--", 0) != 0 || it->size() < 3) continue;
    const std::string name = it->substr(2, it->find('=') == std::string::npos ? std::string::npos : it->find('=') - 2);
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    const std::string near = nearest_name(name, names);
    out +=
        near.empty()
            ? fmt::format("kagent: '--{}' is not an option of kagent {}; see kagent {} --help\n", name, *first, *first)
            : fmt::format("kagent: '--{}' is not an option of kagent {}; did you mean '--{}'?\n", name, *first, near);
  }
  return out;
}

}  // namespace kagent::cli
