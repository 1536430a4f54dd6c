// acmetrace: one binary, one subcommand per stage. Exit codes: 0 ok, 1 failure, 2 usage.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"acmetrace: replay the AcmeTrace release (Seren and Kalos, NSDI '24) as a live feed"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  acmetrace::apps::CommandRegistry registry;
  acmetrace::apps::RegisterCommands(app, registry);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    return registry.Run();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "acmetrace: %s\n", e.what());
    return 2;
  }
}
