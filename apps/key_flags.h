// Flags that set a configuration key: each declared once with its key, so a command lists its
// flags once and gets its overrides (flag > environment > file > default) from the same list.
#pragma once

#include <CLI/CLI.hpp>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace acmetrace::apps {

/// A command's flags that set keys. Each help ends with "[key]" (LoadConfig names the flag of a wrong
/// value by it). Holds the values CLI11 writes: keep it alive as long as the command (in its
/// shared flags). Not thread-safe.
class KeyFlags {
 public:
  explicit KeyFlags(CLI::App* cmd) : cmd_(cmd) {}
  /// `--name VALUE` sets key to VALUE (an empty VALUE sets nothing).
  KeyFlags& Option(std::string name, std::string key, const std::string& help);
  /// `--name` sets key to true.
  KeyFlags& Flag(std::string name, std::string key, const std::string& help);
  /// When the flag declared last is given, it also sets key to value (run's --brokers: run.transport kafka).
  KeyFlags& AlsoSets(std::string key, std::string value);

  /// True if the flag was given (with a value).
  bool given(std::string_view name) const;
  /// The keys the given flags set, in the order the flags were declared.
  std::vector<std::pair<std::string, std::string>> Overrides() const;

 private:
  struct Entry {
    std::string name, key, value;
    bool is_flag = false;
    bool on = false;
    std::vector<std::pair<std::string, std::string>> also;
    bool given() const { return is_flag ? on : !value.empty(); }
  };
  CLI::App* cmd_;
  std::deque<Entry> entries_;  // CLI11 keeps pointers into the entries
};

}  // namespace acmetrace::apps
