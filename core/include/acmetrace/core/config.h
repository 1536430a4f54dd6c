// Configuration: every key is declared once, beside the code that uses it, with its default and
// help text; YAML files and command-line flags can only set declared keys.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// A declared key: "section.name", its default (as YAML text) and one line of help.
struct ConfigKey {
  std::string key;
  std::string default_value;
  std::string help;
};

/// The run's configuration. Declare keys, then load YAML and apply flags; reading an undeclared
/// key is a programming error (throws). Not thread-safe; read-only after start-up.
class Config {
 public:
  /// Declares a key such as "replay.speed". Re-declaring the same key is a programming error.
  void Declare(const std::string& key, const std::string& default_value, const std::string& help);

  /// Loads a YAML file of sections and keys ({section: {key: value}}). Unknown sections or keys,
  /// and non-scalar values, are errors naming the file and line.
  Status LoadYamlFile(const std::string& path);
  Status LoadYamlText(const std::string& text, const std::string& origin);

  /// Sets a key from a command-line flag (overrides files). Unknown keys are an error.
  Status Set(const std::string& key, const std::string& value);

  std::string GetString(const std::string& key) const;
  /// Parses the value; a malformed value is an error naming the key (start-up: throws
  /// std::invalid_argument, which the binary turns into exit 2).
  int64_t GetInt(const std::string& key) const;
  double GetDouble(const std::string& key) const;
  bool GetBool(const std::string& key) const;
  /// A comma-separated list ("seren,kalos"); empty text gives an empty list.
  std::vector<std::string> GetList(const std::string& key) const;

  /// Every key in declaration order, with its default and help, as a commented YAML document.
  std::string DocumentedYaml() const;
  const std::vector<ConfigKey>& keys() const { return keys_; }

 private:
  const ConfigKey& Find(const std::string& key) const;

  std::vector<ConfigKey> keys_;
  std::map<std::string, std::string> values_;
};

}  // namespace acmetrace::core
