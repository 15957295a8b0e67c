// kagent: the command-line entry point. Subcommands live in cmd_*.cpp; this file owns the exit
// codes: 0 ok, 1 the candidate or gate failed, 2 bad input or usage, 3 environment missing.
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "suggest.hpp"

namespace {

void setup_logging(bool verbose) {
  // Logs go to stderr so --json output on stdout stays machine-readable.
  auto logger = spdlog::stderr_color_mt("kagent");
  // Verbose logs carry the time of day to the millisecond: the children's phases (child_client.cpp)
  // then read as a timeline of where an evaluation's time goes.
  logger->set_pattern(verbose ? "kagent: %H:%M:%S.%e %^%l%$: %v" : "kagent: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug also works
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kagent: agentic CUDA kernel optimization harness", "kagent"};
  // Set before the subcommands are added: each takes the app's formatter and footer when made.
  app.formatter(std::make_shared<kagent::cli::HelpFormatter>());
  app.footer(kagent::cli::kExitCodesHelp);
  app.set_version_flag("--version", std::string("kagent ") + KAGENT_VERSION);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Debug logging on stderr");
  app.require_subcommand(1);

  std::vector<kagent::cli::Command> commands = {
      kagent::cli::add_compile_command(app),  kagent::cli::add_eval_command(app),
      kagent::cli::add_doctor_command(app),   kagent::cli::add_ref_command(app),
      kagent::cli::add_optimize_command(app), kagent::cli::add_report_command(app),
      kagent::cli::add_bench_command(app),    kagent::cli::add_check_command(app),
      kagent::cli::add_profile_command(app),  kagent::cli::add_serve_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help/version (rc 0) or the parse error
    if (rc == 0) return 0;
    // A typo's likeliest meaning, after CLI11's own message.
    std::fflush(stdout);
    fmt::print(stderr, "{}", kagent::cli::usage_suggestions(app, std::vector<std::string>(argv + 1, argv + argc)));
    return static_cast<int>(kagent::ExitCode::bad_input);
  }
  setup_logging(verbose);

  for (const auto& cmd : commands) {
    if (!cmd.app->parsed()) continue;
    try {
      return cmd.run();
    } catch (const kagent::Error& e) {
      std::fflush(stdout);
      fmt::print(stderr, "kagent: error: {}\n", e.what());
      // A script that asked for --json reads stdout: it gets the error there too, as JSON.
      if (const CLI::Option* json = cmd.app->get_option_no_throw("--json"); json != nullptr && json->count() > 0)
        fmt::print("{}\n", nlohmann::json{{"error", e.what()}, {"exit_code", static_cast<int>(e.code())}}.dump(
                               -1, ' ', false, nlohmann::json::error_handler_t::replace));
      return static_cast<int>(e.code());
    } catch (const std::exception& e) {
      // Not a known failure mode: say so plainly rather than abort.
      std::fflush(stdout);
      fmt::print(stderr, "kagent: internal error: {}\n", e.what());
      return static_cast<int>(kagent::ExitCode::environment);
    }
  }
  return static_cast<int>(kagent::ExitCode::bad_input);
}
