// The subcommands of the acmetrace binary, registered in one visible list (RegisterCommands).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "acmetrace/core/config.h"
#include "acmetrace/core/status.h"
#include "acmetrace/scoring/range_query.h"
#include "key_flags.h"

namespace acmetrace::apps {

/// Holds the configuration and the action of the subcommand that was chosen. Not thread-safe.
class CommandRegistry {
 public:
  core::Config& config() { return config_; }
  /// Remembers what to run if this subcommand is chosen.
  void OnRun(std::function<int()> action) { action_ = std::move(action); }
  int Run() { return action_ ? action_() : 2; }
  /// The --config file, loaded before the environment and flags apply.
  std::string config_file;
  /// The parsed command line: LoadConfig names the flag that set a wrong value.
  void set_app(const CLI::App* app) { app_ = app; }
  const CLI::App* app() const { return app_; }
  /// The flags of subcommand cmd that set keys (made on first use; they live as long as the registry).
  KeyFlags& KeyFlagsOf(CLI::App* cmd);
  /// A subcommand and its flags that set keys.
  struct Command {
    CLI::App* cmd;
    KeyFlags& keys;
  };
  /// Adds subcommand name to app, with its KeyFlagsOf.
  Command AddCommand(CLI::App& app, std::string name, std::string description);
  /// When cmd is chosen: LoadConfig (exit 2 if it fails), then action with the loaded configuration.
  void OnRunWithConfig(CLI::App* cmd, std::function<int(const core::Config&)> action);
  /// The keys the flags given on the chosen subcommand set (LoadConfig applies them).
  std::vector<std::pair<std::string, std::string>> Overrides() const;

 private:
  core::Config config_;
  const CLI::App* app_ = nullptr;
  std::function<int()> action_;
  std::map<const CLI::App*, std::unique_ptr<KeyFlags>> key_flags_;
};

void RegisterCommands(CLI::App& app, CommandRegistry& registry);

// One per subcommand, each in its own file.
void RegisterSynth(CLI::App& app, CommandRegistry& registry);
void RegisterSummary(CLI::App& app, CommandRegistry& registry);
void RegisterReplay(CLI::App& app, CommandRegistry& registry);
void RegisterProcess(CLI::App& app, CommandRegistry& registry);
void RegisterExport(CLI::App& app, CommandRegistry& registry);
void RegisterRun(CLI::App& app, CommandRegistry& registry);
void RegisterConfig(CLI::App& app, CommandRegistry& registry);
void RegisterScore(CLI::App& app, CommandRegistry& registry);
void RegisterBackfill(CLI::App& app, CommandRegistry& registry);
void RegisterRules(CLI::App& app, CommandRegistry& registry);

/// Loads --config (if given), then the ACMETRACE_<SECTION>_<KEY> environment variables, then the flags
/// of the chosen subcommand that were set (registry.Overrides()), and checks the whole configuration
/// (pipeline::CheckAllConfig). Errors are usage errors: prints every one, one line each, and returns false.
bool LoadConfig(CommandRegistry& registry);

/// --data DIR, or without it (data empty) the embedded default data set, made if missing
/// (pipeline::PrepareDefaultData); nullopt, logged under command, if it cannot be made.
std::optional<std::string> DataDirOrDefault(const std::string& data, const core::Config& config, const char* command);

/// The HTTP client flags of score and backfill (--bearer-token-file, --basic-auth-file, --header,
/// --ca-file; empty: not given) as client options. Errors name the flag and file, never a secret.
struct HttpClientFlags {
  std::string bearer_token_file, basic_auth_file, ca_file;
  std::vector<std::string> headers;
  bool any() const { return first_given() != nullptr; }
  /// The first of the four flags given (in the order above, --header last), nullptr if none.
  const char* first_given() const;
};
/// Declares the four flags on cmd; `with` prefixes each help text (e.g. "with --remote-write: ").
void AddHttpClientFlags(CLI::App* cmd, HttpClientFlags& flags, const std::string& with = "");
core::Result<scoring::ClientOptions> ClientOptionsFromFlags(const HttpClientFlags& flags);

}  // namespace acmetrace::apps
