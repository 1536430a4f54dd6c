// Configuration: every key is declared once, beside the code that uses it, with its default, help
// text and type (with its range); YAML files, environment variables and command-line flags can only
// set declared keys, and Validate checks every value against its type before anything runs.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// The longest duration a *_s or *_ms key accepts, in seconds (about 31 years): far beyond any trace,
/// and small enough that seconds * 1000 stays exact in an int64 and a double.
inline constexpr int64_t kMaxConfigSeconds = 1'000'000'000;

/// What values a key accepts: a type and, for numbers, a range. Config::Validate checks every value
/// with Check; the fields are public so a test can generate values just inside and outside the range.
/// Value type.
struct ConfigType {
  enum class Kind { kString, kBool, kInt, kDouble, kEnum, kList, kCustom };
  /// How a double range ends: the bound itself is accepted (closed) or not (open).
  enum class Bound { kClosed, kOpen };
  using Checker = std::function<std::optional<std::string>(std::string_view value)>;

  Kind kind = Kind::kString;
  bool allow_empty = true;  // kString, kCustom: "" accepted; kList: zero items accepted
  int64_t int_min = std::numeric_limits<int64_t>::min();
  int64_t int_max = std::numeric_limits<int64_t>::max();
  std::optional<int64_t> int_also;  // kInt: one value outside [int_min, int_max] that means something (-1)
  double double_min = -std::numeric_limits<double>::infinity();
  double double_max = std::numeric_limits<double>::infinity();
  Bound min_bound = Bound::kClosed;
  Bound max_bound = Bound::kClosed;
  std::vector<std::string> choices;         // kEnum
  std::shared_ptr<const ConfigType> item;   // kList: the type of each comma-separated item
  std::string what;                         // kCustom: what it accepts, e.g. "max or a positive number"
  Checker check;                            // kCustom: the reason a value is wrong, or nullopt
  std::vector<std::string> bad_examples;    // kCustom: values it must reject (tests)
  std::vector<std::string> good_examples;   // kCustom: values it must accept (tests)

  /// Any text.
  static ConfigType String();
  /// Any text but the empty one.
  static ConfigType NonEmptyString();
  /// true/yes/on/1 or false/no/off/0 (any case).
  static ConfigType Bool();
  /// An integer in [min, max].
  static ConfigType Int(int64_t min = std::numeric_limits<int64_t>::min(),
                        int64_t max = std::numeric_limits<int64_t>::max());
  /// An integer in [min, max], or also (a value with its own meaning, such as -1 for "broker default").
  static ConfigType IntOr(int64_t also, int64_t min, int64_t max);
  /// A finite number between min and max, each bound closed or open.
  static ConfigType Double(double min, double max, Bound min_bound = Bound::kClosed,
                           Bound max_bound = Bound::kClosed);
  /// A number of seconds in [min, kMaxConfigSeconds] (fractions allowed).
  static ConfigType Seconds(double min = 0);
  /// A number of seconds above 0 (fractions allowed), at most kMaxConfigSeconds.
  static ConfigType PositiveSeconds();
  /// One of choices, exactly.
  static ConfigType Enum(std::vector<std::string> choices);
  /// A comma-separated list (a YAML sequence is joined with commas) of items of type item; empty
  /// items are skipped. min_items 1: the list may not be empty.
  static ConfigType List(ConfigType item, size_t min_items = 0);
  /// HOST:PORT with a port in [0, 65535]; the host may be empty (":9400", all interfaces) or an
  /// IPv6 address in brackets.
  static ConfigType HostPort();
  /// A point in time: unix seconds or ISO 8601 with an offset (core::ParseTimeMs).
  static ConfigType Time();
  /// Anything check accepts; bad and good examples drive the tests.
  static ConfigType Custom(std::string what, Checker check, std::vector<std::string> bad_examples,
                           std::vector<std::string> good_examples);

  /// The same type that also accepts "" (which then means "none" or "all", as the help says).
  ConfigType OrEmpty() const;

  /// Why value is not of this type (one line, quoting at most the start of the value), or nullopt.
  std::optional<std::string> Check(std::string_view value) const;
  /// What the type accepts, for `acmetrace config`: "integer >= 1", "number in (0, 1]", ...
  std::string Describe() const;
};

/// A declared key: "section.name", its default (as YAML text), one line of help and its type.
struct ConfigKey {
  std::string key;
  std::string default_value;
  std::string help;
  ConfigType type;
};

/// The run's configuration. Declare keys, then load YAML, the environment and flags, then Validate;
/// reading an undeclared key is a programming error (throws). Not thread-safe; read-only after
/// start-up.
class Config {
 public:
  /// Declares a key such as "replay.speed". Re-declaring the same key, or a key whose environment
  /// variable another key already has, is a programming error.
  void Declare(const std::string& key, const std::string& default_value, const std::string& help,
               ConfigType type = ConfigType::String());
  /// Narrows a declared key to choices its declaring stage cannot know (a transport's name: the
  /// pipeline's registry of transports has them), before anything is loaded. Its default must be
  /// one of them; an undeclared key is a programming error.
  void SetChoices(const std::string& key, std::vector<std::string> choices);

  /// Loads a YAML file of sections and keys ({section: {key: value}}). Unknown sections or keys,
  /// keys set twice, non-scalar values and malformed YAML are errors naming the file and line; every
  /// error is reported, one per line of the message. Values are checked later, by Validate.
  Status LoadYamlFile(const std::string& path);
  Status LoadYamlText(std::string_view text, const std::string& origin);

  /// Applies ACMETRACE_<SECTION>_<KEY> variables from envp (a null-terminated array of NAME=VALUE,
  /// like environ). A variable that starts with a declared section's prefix but names no key is an
  /// error naming it (a misspelt override is never silently ignored), unless it is one of
  /// not_config (variables of other tools that share the prefix); other variables are ignored.
  Status ApplyEnvironment(const char* const* envp, const std::vector<std::string>& not_config = {});
  /// ACMETRACE_ + the key in upper case, with every character but letters and digits as '_'.
  static std::string EnvName(std::string_view key);

  /// Sets a key (a command-line flag: overrides files and the environment). origin names where the
  /// value came from in errors ("--speed"); empty = the key. Unknown keys are an error.
  Status Set(const std::string& key, const std::string& value, const std::string& origin = "");

  /// Checks every key's value against its type: one line per wrong key, "WHERE: reason" (see Where),
  /// in declaration order; empty when all are good.
  std::vector<std::string> Validate() const;
  /// Where key's value came from, as errors begin: "file.yaml:3: detect.gpu_overheat.open_c" for a
  /// file, "--speed" for a flag, "ACMETRACE_REPLAY_SPEED" for a variable, the key for a default.
  std::string Where(const std::string& key) const;
  /// Throws std::invalid_argument "WHERE: reason" when key's value is not of its type (for code that
  /// reads keys without Validate having run first, such as tests).
  void RequireValid(const std::string& key) const;
  /// RequireValid for every key of section ("process"): what a stage's options builder calls first.
  void RequireValidSection(std::string_view section) const;

  std::string GetString(const std::string& key) const;
  /// Parses the value; a malformed value is an error naming where it came from (start-up: throws
  /// std::invalid_argument, which the binary turns into exit 2). After Validate passes they cannot.
  int64_t GetInt(const std::string& key) const;
  double GetDouble(const std::string& key) const;
  bool GetBool(const std::string& key) const;
  /// A comma-separated list ("seren,kalos"); empty text gives an empty list.
  std::vector<std::string> GetList(const std::string& key) const;

  /// Every key in declaration order, with its help and type, as a commented YAML document: with
  /// kDefaults each key's default (configs/acmetrace.yaml); with kEffective its value now, and where a
  /// file, variable or flag set it, a comment saying which (`acmetrace config`).
  enum class Values { kDefaults, kEffective };
  std::string DocumentedYaml(Values values = Values::kDefaults) const;
  const std::vector<ConfigKey>& keys() const { return keys_; }

 private:
  struct Value {
    std::string text;
    std::string where;  // see Where(); empty = the default
  };
  const ConfigKey* FindOrNull(std::string_view key) const;
  const ConfigKey& Find(const std::string& key) const;

  std::vector<ConfigKey> keys_;
  std::map<std::string, Value, std::less<>> values_;
};

/// Splits a comma-separated list, trimming spaces and skipping empty items.
std::vector<std::string> SplitConfigList(std::string_view text);

/// value quoted for an error message: at most 64 bytes of it, control and non-ASCII bytes as \xNN,
/// so a message stays one short line whatever the value holds.
std::string QuoteConfigValue(std::string_view value);

}  // namespace acmetrace::core
