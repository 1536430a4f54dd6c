// The list of subcommands and the shared config loading.
#include "commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "acmetrace/core/log.h"
#include "acmetrace/pipeline/config_keys.h"
#include "acmetrace/pipeline/pipeline.h"

namespace acmetrace::apps {

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  // Every stage declares its keys beside its code; they are all known to every subcommand so a
  // config file can hold every section.
  pipeline::DeclareAllConfig(registry.config());
  registry.set_app(&app);
  app.add_option("--config", registry.config_file, "YAML configuration file (see `acmetrace config`)")
      ->check(CLI::ExistingFile);
  RegisterSynth(app, registry);
  RegisterSummary(app, registry);
  RegisterReplay(app, registry);
  RegisterProcess(app, registry);
  RegisterExport(app, registry);
  RegisterRun(app, registry);
  RegisterConfig(app, registry);
  RegisterBackfill(app, registry);
  RegisterScore(app, registry);
  RegisterRules(app, registry);
}

std::optional<std::string> DataDirOrDefault(const std::string& data, const core::Config& config, const char* command) {
  if (!data.empty()) return data;
  core::Result<std::string> dir =
      pipeline::PrepareDefaultData(config, [command](const std::string& line) { core::LogInfo(command, line); });
  if (!dir.ok()) {
    core::LogError(command, "default data set: " + dir.status().message());
    return std::nullopt;
  }
  return dir.value();
}

namespace {

// The flag of the chosen subcommand that sets key: by convention its help ends with "[key]".
std::string FlagFor(const CLI::App* app, const std::string& key) {
  if (app == nullptr) return "";
  const std::string tag = "[" + key + "]";
  for (const CLI::App* sub : app->get_subcommands()) {
    for (const CLI::Option* option : sub->get_options()) {
      if (option->count() > 0 && option->get_description().find(tag) != std::string::npos) {
        return option->get_name();
      }
    }
  }
  return "";
}

void AddLines(const core::Status& status, std::vector<std::string>& errors) {
  if (status.ok()) return;
  size_t start = 0;
  while (start <= status.message().size()) {
    size_t end = status.message().find('\n', start);
    if (end == std::string::npos) end = status.message().size();
    errors.push_back(status.message().substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

KeyFlags& CommandRegistry::KeyFlagsOf(CLI::App* cmd) {
  std::unique_ptr<KeyFlags>& keys = key_flags_[cmd];
  if (!keys) keys = std::make_unique<KeyFlags>(cmd);
  return *keys;
}

CommandRegistry::Command CommandRegistry::AddCommand(CLI::App& app, std::string name, std::string description) {
  CLI::App* cmd = app.add_subcommand(std::move(name), std::move(description));
  return Command{cmd, KeyFlagsOf(cmd)};
}

void CommandRegistry::OnRunWithConfig(CLI::App* cmd, std::function<int(const core::Config&)> action) {
  cmd->callback([this, action = std::move(action)] {
    OnRun([this, action] { return LoadConfig(*this) ? action(config_) : 2; });
  });
}

std::vector<std::pair<std::string, std::string>> CommandRegistry::Overrides() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (app_ == nullptr) return out;
  for (const CLI::App* sub : app_->get_subcommands()) {
    if (auto keys = key_flags_.find(sub); keys != key_flags_.end()) {
      for (auto& kv : keys->second->Overrides()) out.push_back(std::move(kv));
    }
  }
  return out;
}

bool LoadConfig(CommandRegistry& registry) {
  // Precedence: flag > environment > file > default, so they are applied in the reverse order.
  core::Config& config = registry.config();
  std::vector<std::string> errors;
  if (!registry.config_file.empty()) AddLines(config.LoadYamlFile(registry.config_file), errors);
  // scripts/kafka-local's variable shares the kafka section's prefix; it is not a config key.
  AddLines(config.ApplyEnvironment(environ, {"ACMETRACE_KAFKA_HOME"}), errors);
  for (const auto& [key, value] : registry.Overrides()) AddLines(config.Set(key, value, FlagFor(registry.app(), key)), errors);
  // Everything is checked now, before any command opens a file or starts a thread: a bad value is a
  // usage error here, not an abort once the run has started.
  for (std::string& e : pipeline::CheckAllConfig(config)) errors.push_back(std::move(e));
  for (const std::string& e : errors) core::LogError("acmetrace", e);
  return errors.empty();
}

void RegisterConfig(CLI::App& app, CommandRegistry& registry) {
  CLI::App* cmd = app.add_subcommand(
      "config", "print the effective configuration (--config file and ACMETRACE_* variables applied) as commented YAML");
  auto defaults = std::make_shared<bool>(false);
  cmd->add_flag("--defaults", *defaults, "print every key's default instead (what configs/acmetrace.yaml holds)");
  cmd->callback([&registry, defaults] {
    registry.OnRun([&registry, defaults] {
      if (!LoadConfig(registry)) return 2;
      const core::Config::Values values = *defaults ? core::Config::Values::kDefaults : core::Config::Values::kEffective;
      std::fputs(registry.config().DocumentedYaml(values).c_str(), stdout);
      return 0;
    });
  });
}

const char* HttpClientFlags::first_given() const {
  if (!bearer_token_file.empty()) return "--bearer-token-file";
  if (!basic_auth_file.empty()) return "--basic-auth-file";
  if (!headers.empty()) return "--header";
  if (!ca_file.empty()) return "--ca-file";
  return nullptr;
}

void AddHttpClientFlags(CLI::App* cmd, HttpClientFlags& flags, const std::string& with) {
  cmd->add_option("--bearer-token-file", flags.bearer_token_file,
                  with + "send Authorization: Bearer with the token in FILE (one line)");
  cmd->add_option("--basic-auth-file", flags.basic_auth_file, with + "HTTP basic authentication, FILE holding user:password");
  cmd->add_option("--header", flags.headers,
                  with + "an HTTP header sent with every request, 'Name: value' (repeatable; e.g. 'X-Scope-OrgID: team-a')");
  cmd->add_option("--ca-file", flags.ca_file,
                  with + "PEM certificates that sign the https server's certificate (default: the system's)");
}

core::Result<scoring::ClientOptions> ClientOptionsFromFlags(const HttpClientFlags& flags) {
  scoring::ClientOptions options;
  if (!flags.bearer_token_file.empty()) {
    auto token = scoring::ReadBearerTokenFile(flags.bearer_token_file);
    if (!token.ok()) return token.status();
    options.bearer_token = std::move(token).value();
  }
  if (!flags.basic_auth_file.empty()) {
    auto auth = scoring::ReadBasicAuthFile(flags.basic_auth_file);
    if (!auth.ok()) return auth.status();
    options.basic = true;
    options.basic_user = auth.value().user;
    options.basic_password = auth.value().password;
  }
  for (const std::string& header : flags.headers) {
    auto parsed = scoring::ParseHeaderFlag(header);
    if (!parsed.ok()) return parsed.status();
    options.headers.push_back(std::move(parsed).value());
  }
  if (!flags.ca_file.empty()) {
    std::FILE* ca = std::fopen(flags.ca_file.c_str(), "rb");
    if (ca == nullptr) {
      return core::Status::Error("--ca-file: " + flags.ca_file + ": cannot open: " + std::strerror(errno));
    }
    std::fclose(ca);
    options.ca_file = flags.ca_file;
  }
  return options;
}

}  // namespace acmetrace::apps
