// One typed declaration per setting: a section's table names each key once, with the options
// struct's member it fills, its type and bounds (a ConfigType, which Config::Validate checks before
// anything runs), its unit and its help. The default is the struct's own member initializer, read
// from Options{} (so it is written once, in the struct), unless a row gives the configuration a
// different one on purpose. From the table: Declare (which drives `acmetrace config` and
// configs/acmetrace.yaml), and Fill (the struct from a validated Config, with no check by hand: the
// type's bounds are the only ones). Checks across keys stay with the section (Redpanda's
// bounded_property is the model).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/time.h"

namespace acmetrace::core {

/// A number as a default's YAML text: integers without a fraction, others in their shortest form.
inline std::string SettingNumberText(double v) {
  if (std::isfinite(v) && std::abs(v) < 1e15 && v == std::floor(v)) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

template <class Options>
class Settings {
 public:
  /// section: "export" for export.* keys.
  explicit Settings(std::string section) : section_(std::move(section)) {}

  /// An integer member (int, int64_t, ...) in [min, max].
  template <class M>
  Settings& Int(std::string name, M Options::*member, int64_t min, int64_t max, std::string help) {
    static_assert(std::is_integral_v<M>);
    return Row(std::move(name), std::to_string(Options{}.*member), std::move(help), ConfigType::Int(min, max),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = static_cast<M>(c.GetInt(key)); });
  }
  /// An integer member of the given type (ConfigType::IntOr: a range and one value outside it).
  template <class M>
  Settings& Int(std::string name, M Options::*member, ConfigType type, std::string help) {
    static_assert(std::is_integral_v<M>);
    return Row(std::move(name), std::to_string(Options{}.*member), std::move(help), std::move(type),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = static_cast<M>(c.GetInt(key)); });
  }
  /// A key in seconds (whole, in [min_s, max_s]), held in milliseconds by member.
  Settings& SecondsAsMs(std::string name, int64_t Options::*member, int64_t min_s, int64_t max_s, std::string help) {
    return Row(std::move(name), std::to_string(Options{}.*member / 1000), std::move(help), ConfigType::Int(min_s, max_s),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = c.GetInt(key) * 1000; });
  }
  Settings& SecondsAsMs(std::string name, int64_t Options::*member, int64_t min_s, std::string help) {
    return SecondsAsMs(std::move(name), member, min_s, kMaxConfigSeconds, std::move(help));
  }
  /// A time key (unix seconds or ISO 8601 with an offset; empty: none), held in ms by member.
  Settings& OptionalTime(std::string name, std::optional<int64_t> Options::*member, std::string help) {
    return Row(std::move(name), "", std::move(help), ConfigType::Time().OrEmpty(),
               [member](const Config& c, const std::string& key, Options& o) {
                 const std::string text = c.GetString(key);
                 o.*member = text.empty() ? std::nullopt : ParseTimeMs(text);
               });
  }
  /// A key in seconds (fractions allowed, at least a millisecond: less would be 0 in member), held in
  /// milliseconds by member.
  Settings& PositiveSecondsAsMs(std::string name, int64_t Options::*member, std::string help) {
    return Row(std::move(name), SettingNumberText(static_cast<double>(Options{}.*member) / 1000.0), std::move(help),
               ConfigType::Double(0.001, static_cast<double>(kMaxConfigSeconds)),
               [member](const Config& c, const std::string& key, Options& o) {
                 o.*member = static_cast<int64_t>(std::llround(c.GetDouble(key) * 1000.0));
               });
  }
  /// A number member of the given type (ConfigType::Double with its bounds).
  Settings& Double(std::string name, double Options::*member, ConfigType type, std::string help) {
    return Row(std::move(name), SettingNumberText(Options{}.*member), std::move(help), std::move(type),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = c.GetDouble(key); });
  }
  Settings& Bool(std::string name, bool Options::*member, std::string help) {
    return Row(std::move(name), Options{}.*member ? "true" : "false", std::move(help), ConfigType::Bool(),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = c.GetBool(key); });
  }
  /// A text member of the given type (String, NonEmptyString, HostPort, Enum of texts...).
  Settings& Text(std::string name, std::string Options::*member, ConfigType type, std::string help) {
    return Row(std::move(name), Options{}.*member, std::move(help), std::move(type),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = c.GetString(key); });
  }
  /// A comma-separated list member; type is the ConfigType::List it must match.
  Settings& TextList(std::string name, std::vector<std::string> Options::*member, ConfigType type, std::string help) {
    std::string joined;
    const Options defaults{};
    for (const std::string& item : defaults.*member) joined += (joined.empty() ? "" : ",") + item;
    return Row(std::move(name), std::move(joined), std::move(help), std::move(type),
               [member](const Config& c, const std::string& key, Options& o) { o.*member = c.GetList(key); });
  }
  /// An enum member: each choice's text and value, in the order help and errors list them.
  template <class E>
  Settings& Choice(std::string name, E Options::*member, std::vector<std::pair<std::string, E>> choices, std::string help) {
    std::vector<std::string> texts;
    std::string default_text;
    for (const auto& [text, value] : choices) {
      texts.push_back(text);
      if (value == Options{}.*member) default_text = text;
    }
    return Row(std::move(name), std::move(default_text), std::move(help), ConfigType::Enum(std::move(texts)),
               [member, choices](const Config& c, const std::string& key, Options& o) {
                 const std::string text = c.GetString(key);
                 for (const auto& [t, value] : choices) {
                   if (t == text) o.*member = value;
                 }
               });
  }
  /// A key whose value is read by fill (a structured value such as a list of cluster=N), with the
  /// default text given here because the member's form differs from the key's.
  Settings& Custom(std::string name, std::string default_value, ConfigType type, std::string help,
                   std::function<void(const Config&, const std::string& key, Options&)> fill) {
    return Row(std::move(name), std::move(default_value), std::move(help), std::move(type), std::move(fill));
  }
  /// A key no member of Options holds (a command reads it itself, e.g. where its input comes from).
  Settings& Unbound(std::string name, std::string default_value, ConfigType type, std::string help) {
    return Row(std::move(name), std::move(default_value), std::move(help), std::move(type),
               [](const Config&, const std::string&, Options&) {});
  }
  /// The previous row's configuration default, where it differs on purpose from the struct's (say why
  /// at the call).
  Settings& ConfigDefault(std::string default_value) {
    rows_.back().key.default_value = std::move(default_value);
    return *this;
  }

  /// Declares every row's key in config, in the table's order.
  void Declare(Config& config) const {
    for (const RowSpec& r : rows_) config.Declare(r.key.key, r.key.default_value, r.key.help, r.key.type);
  }
  /// The struct from config's values (its section validated first: a bad value throws
  /// std::invalid_argument naming where it came from).
  Options Fill(const Config& config) const {
    config.RequireValidSection(section_);
    Options o;
    for (const RowSpec& r : rows_) r.fill(config, r.key.key, o);
    return o;
  }
  const std::string& section() const { return section_; }

 private:
  struct RowSpec {
    ConfigKey key;
    std::function<void(const Config&, const std::string&, Options&)> fill;
  };
  Settings& Row(std::string name, std::string default_value, std::string help, ConfigType type,
                std::function<void(const Config&, const std::string&, Options&)> fill) {
    rows_.push_back(RowSpec{ConfigKey{section_ + "." + name, std::move(default_value), std::move(help), std::move(type)},
                            std::move(fill)});
    return *this;
  }
  std::string section_;
  std::vector<RowSpec> rows_;
};

}  // namespace acmetrace::core
