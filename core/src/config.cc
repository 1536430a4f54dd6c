// Config: yaml-cpp for the files, strict about unknown keys so a typo is never silently ignored, and
// every value checked against its declared type at load, so a bad value stops the run before it starts.
#include "acmetrace/core/config.h"
#include "acmetrace/core/utf8.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::core {
namespace {

// Like QuoteConfigValue without the quotes: for keys and section names a file may spell with
// anything in them.
std::string Printable(std::string_view text, size_t max_bytes = 64) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

std::string FormatNumber(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);  // 1000000000, not 1e+09
    return buf;
  }
  // The shortest text that reads back as v: 0.5, not 0.50000000000000000.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  return buf;
}

std::optional<bool> ParseBool(std::string_view text) {
  std::string v(text);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "yes" || v == "on" || v == "1") return true;
  if (v == "false" || v == "no" || v == "off" || v == "0") return false;
  return std::nullopt;
}

std::string Alternatives(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

std::string IntRange(const ConfigType& t) {
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
  constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();
  std::string range;
  if (t.int_min != kLowest && t.int_max != kHighest) {
    range = "in [" + std::to_string(t.int_min) + ", " + std::to_string(t.int_max) + "]";
  } else if (t.int_min != kLowest) {
    range = ">= " + std::to_string(t.int_min);
  } else if (t.int_max != kHighest) {
    range = "<= " + std::to_string(t.int_max);
  }
  if (t.int_also) range = std::to_string(*t.int_also) + " or " + range;
  return range;
}

std::string DoubleRange(const ConfigType& t) {
  const bool has_min = std::isfinite(t.double_min);
  const bool has_max = std::isfinite(t.double_max);
  const bool min_open = t.min_bound == ConfigType::Bound::kOpen;
  const bool max_open = t.max_bound == ConfigType::Bound::kOpen;
  if (has_min && has_max) {
    return std::string("in ") + (min_open ? "(" : "[") + FormatNumber(t.double_min) + ", " +
           FormatNumber(t.double_max) + (max_open ? ")" : "]");
  }
  if (has_min) return (min_open ? "> " : ">= ") + FormatNumber(t.double_min);
  if (has_max) return (max_open ? "< " : "<= ") + FormatNumber(t.double_max);
  return "";
}

// YAML reads `null` as "no value" (the empty text: `state_dir: null` is no directory), but
// `sink: null` means replay.sink's choice null: where the key's type has the word as a choice, keep it.
std::string NullText(std::string_view text, const YAML::Mark& mark, const ConfigType& type) {
  if (type.kind != ConfigType::Kind::kEnum || mark.pos < 0 || static_cast<size_t>(mark.pos) >= text.size()) return "";
  std::string_view rest = text.substr(static_cast<size_t>(mark.pos));
  rest = TrimSpaces(rest.substr(0, rest.find_first_of("\r\n#")));
  for (const std::string& choice : type.choices) {
    if (rest == choice) return choice;
  }
  return "";
}

}  // namespace

std::string QuoteConfigValue(std::string_view value) { return "'" + Printable(value) + "'"; }

std::vector<std::string> SplitConfigList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string item(TrimSpaces(text.substr(start, comma - start)));
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

// --- ConfigType -----------------------------------------------------------------------------------

ConfigType ConfigType::String() { return ConfigType{}; }

ConfigType ConfigType::NonEmptyString() {
  ConfigType t;
  t.allow_empty = false;
  return t;
}

ConfigType ConfigType::Bool() {
  ConfigType t;
  t.kind = Kind::kBool;
  return t;
}

ConfigType ConfigType::Int(int64_t min, int64_t max) {
  if (min > max) throw std::logic_error("ConfigType::Int: min > max");
  ConfigType t;
  t.kind = Kind::kInt;
  t.int_min = min;
  t.int_max = max;
  return t;
}

ConfigType ConfigType::IntOr(int64_t also, int64_t min, int64_t max) {
  ConfigType t = Int(min, max);
  if (also >= min && also <= max) throw std::logic_error("ConfigType::IntOr: the extra value is in the range");
  t.int_also = also;
  return t;
}

ConfigType ConfigType::Double(double min, double max, Bound min_bound, Bound max_bound) {
  if (!(min <= max)) throw std::logic_error("ConfigType::Double: min > max");
  ConfigType t;
  t.kind = Kind::kDouble;
  t.double_min = min;
  t.double_max = max;
  t.min_bound = min_bound;
  t.max_bound = max_bound;
  return t;
}

ConfigType ConfigType::Seconds(double min) { return Double(min, static_cast<double>(kMaxConfigSeconds)); }

ConfigType ConfigType::PositiveSeconds() {
  return Double(0, static_cast<double>(kMaxConfigSeconds), Bound::kOpen, Bound::kClosed);
}

ConfigType ConfigType::Enum(std::vector<std::string> choices) {
  if (choices.empty()) throw std::logic_error("ConfigType::Enum: no choices");
  ConfigType t;
  t.kind = Kind::kEnum;
  t.choices = std::move(choices);
  return t;
}

ConfigType ConfigType::List(ConfigType item, size_t min_items) {
  if (item.kind == Kind::kList) throw std::logic_error("ConfigType::List: a list of lists");
  ConfigType t;
  t.kind = Kind::kList;
  t.allow_empty = min_items == 0;
  t.item = std::make_shared<const ConfigType>(std::move(item));
  return t;
}

ConfigType ConfigType::Custom(std::string what, Checker check, std::vector<std::string> bad_examples,
                              std::vector<std::string> good_examples) {
  ConfigType t;
  t.kind = Kind::kCustom;
  t.what = std::move(what);
  t.check = std::move(check);
  t.bad_examples = std::move(bad_examples);
  t.good_examples = std::move(good_examples);
  t.allow_empty = false;
  return t;
}

ConfigType ConfigType::HostPort() {
  ConfigType t = Custom(
      "HOST:PORT",
      [](std::string_view v) -> std::optional<std::string> {
        const size_t colon = v.rfind(':');
        if (colon == std::string_view::npos) return "expected HOST:PORT, got " + QuoteConfigValue(v);
        const std::string_view host = v.substr(0, colon);
        if (host.find_first_of(" \t/") != std::string_view::npos ||
            (host.find(':') != std::string_view::npos && (host.front() != '[' || host.back() != ']'))) {
          return "expected HOST:PORT (an IPv6 host in brackets), got " + QuoteConfigValue(v);
        }
        const std::string_view port = v.substr(colon + 1);
        const std::optional<int64_t> p = ParseInteger(port);
        if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos || !p || *p > 65535) {
          return "expected HOST:PORT with a port in [0, 65535], got " + QuoteConfigValue(v);
        }
        return std::nullopt;
      },
      {"localhost", "127.0.0.1:65536", "127.0.0.1:http", "::1:80", "127.0.0.1:-1"},
      {"127.0.0.1:0", ":9400", "0.0.0.0:65535", "[::1]:9400", "localhost:9400"});
  return t;
}

ConfigType ConfigType::Time() {
  ConfigType t = Custom(
      "unix seconds or ISO 8601 with an offset",
      [](std::string_view v) -> std::optional<std::string> {
        if (!ParseTimeMs(v)) return "not unix seconds or ISO 8601 with an offset: " + QuoteConfigValue(v);
        return std::nullopt;
      },
      {"yesterday", "2023-07-01 00:00:00", "2023-13-01T00:00:00+08:00"},
      {"1688140800", "2023-07-01 00:00:00+08:00", "2023-07-01T00:00:00Z"});
  return t;
}

ConfigType ConfigType::OrEmpty() const {
  ConfigType t = *this;
  t.allow_empty = true;
  return t;
}

std::optional<std::string> ConfigType::Check(std::string_view value) const {
  switch (kind) {
    case Kind::kString:
      if (!allow_empty && TrimSpaces(value).empty()) return "must not be empty";
      return std::nullopt;
    case Kind::kBool:
      if (!ParseBool(value)) return "not a boolean (true or false): " + QuoteConfigValue(value);
      return std::nullopt;
    case Kind::kInt: {
      const std::optional<int64_t> v = ParseInteger(value);
      if (!v) return "not an integer: " + QuoteConfigValue(value);
      if ((*v < int_min || *v > int_max) && !(int_also && *v == *int_also)) {
        // The side that was crossed: "must be >= 1, got 0" says more than the whole range.
        std::string bound = *v < int_min ? ">= " + std::to_string(int_min) : "<= " + std::to_string(int_max);
        if (int_also) bound = std::to_string(*int_also) + " or " + bound;
        return "must be " + bound + ", got " + std::to_string(*v);
      }
      return std::nullopt;
    }
    case Kind::kDouble: {
      const std::optional<double> v = ParseDouble(value);
      if (!v || !std::isfinite(*v)) return "not a number: " + QuoteConfigValue(value);
      const bool below = min_bound == Bound::kOpen ? !(*v > double_min) : !(*v >= double_min);
      const bool above = max_bound == Bound::kOpen ? !(*v < double_max) : !(*v <= double_max);
      if (below) {
        return std::string("must be ") + (min_bound == Bound::kOpen ? "> " : ">= ") + FormatNumber(double_min) +
               ", got " + Printable(TrimSpaces(value));
      }
      if (above) {
        return std::string("must be ") + (max_bound == Bound::kOpen ? "< " : "<= ") + FormatNumber(double_max) +
               ", got " + Printable(TrimSpaces(value));
      }
      return std::nullopt;
    }
    case Kind::kEnum:
      for (const std::string& c : choices) {
        if (value == c) return std::nullopt;
      }
      return "expected " + Alternatives(choices) + ", got " + QuoteConfigValue(value);
    case Kind::kList: {
      const std::vector<std::string> items = SplitConfigList(value);
      if (items.empty() && !allow_empty) return "must list at least one item";
      for (size_t i = 0; i < items.size(); ++i) {
        if (std::optional<std::string> why = item->Check(items[i])) {
          return "item " + std::to_string(i + 1) + " of " + std::to_string(items.size()) + ": " + *why;
        }
      }
      return std::nullopt;
    }
    case Kind::kCustom:
      if (value.empty()) return allow_empty ? std::nullopt : std::optional<std::string>("must not be empty");
      return check(value);
  }
  return std::nullopt;
}

std::string ConfigType::Describe() const {
  switch (kind) {
    case Kind::kString:
      return allow_empty ? "text" : "text, not empty";
    case Kind::kBool:
      return "true or false";
    case Kind::kInt: {
      const std::string range = IntRange(*this);
      return range.empty() ? "integer" : "integer " + range;
    }
    case Kind::kDouble: {
      const std::string range = DoubleRange(*this);
      return range.empty() ? "number" : "number " + range;
    }
    case Kind::kEnum:
      return Alternatives(choices);
    case Kind::kList:
      if (item->kind == Kind::kString && item->allow_empty) {
        return allow_empty ? "comma-separated list" : "non-empty comma-separated list";
      }
      return std::string(allow_empty ? "comma-separated list" : "non-empty comma-separated list") + " of " +
             item->Describe();
    case Kind::kCustom:
      return allow_empty ? what + ", or empty" : what;
  }
  return "";
}

// --- Config ---------------------------------------------------------------------------------------

void Config::Declare(const std::string& key, const std::string& default_value, const std::string& help,
                     ConfigType type) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
    throw std::logic_error("config key without section: " + key);
  }
  const std::string env = EnvName(key);
  for (const ConfigKey& k : keys_) {
    if (k.key == key) throw std::logic_error("config key declared twice: " + key);
    if (EnvName(k.key) == env) throw std::logic_error("config keys " + k.key + " and " + key + " share " + env);
  }
  if (std::optional<std::string> why = type.Check(default_value)) {
    throw std::logic_error("config key " + key + ": its default is wrong: " + *why);
  }
  keys_.push_back(ConfigKey{key, default_value, help, std::move(type)});
  values_[key] = Value{default_value, ""};
}

void Config::SetChoices(const std::string& key, std::vector<std::string> choices) {
  for (ConfigKey& k : keys_) {
    if (k.key != key) continue;
    ConfigType type = ConfigType::Enum(std::move(choices));
    if (std::optional<std::string> why = type.Check(k.default_value)) {
      throw std::logic_error("config key " + key + ": its default is not a choice: " + *why);
    }
    k.type = std::move(type);
    return;
  }
  throw std::logic_error("config key not declared: " + key);
}

const ConfigKey* Config::FindOrNull(std::string_view key) const {
  for (const ConfigKey& k : keys_) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

const ConfigKey& Config::Find(const std::string& key) const {
  const ConfigKey* k = FindOrNull(key);
  if (k == nullptr) throw std::logic_error("undeclared config key: " + key);
  return *k;
}

Status Config::LoadYamlFile(const std::string& path) {
  std::string text;
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return Status::Error(path + ": cannot read config file");
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) return Status::Error(path + ": cannot read config file");
  }
  return LoadYamlText(text, path);
}

Status Config::LoadYamlText(std::string_view text, const std::string& origin) {
  auto at = [&origin](const YAML::Mark& mark) {
    return mark.line >= 0 ? origin + ":" + std::to_string(mark.line + 1) : origin;
  };
  std::vector<std::string> errors;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (root.IsNull()) return Status::Ok();
    if (!root.IsMap()) return Status::Error(at(root.Mark()) + ": top level must be a map of sections");
    std::map<std::string, int> lines;  // key -> line of the file that set it
    for (const auto& section : root) {
      if (!section.first.IsScalar()) {
        errors.push_back(at(section.first.Mark()) + ": a section name must be a plain word");
        continue;
      }
      const std::string section_name = YamlScalarText(section.first.Scalar());
      const std::string section_at = at(section.first.Mark());
      const std::string prefix = section_name + ".";
      bool known_section = false;
      for (const ConfigKey& k : keys_) known_section = known_section || k.key.compare(0, prefix.size(), prefix) == 0;
      if (!known_section) {
        errors.push_back(section_at + ": " + Printable(section_name) +
                         ": unknown section (see `acmetrace config` for the documented keys)");
        continue;
      }
      if (section.second.IsNull()) continue;
      if (!section.second.IsMap()) {
        errors.push_back(section_at + ": " + section_name + ": must be a map of keys");
        continue;
      }
      for (const auto& entry : section.second) {
        if (!entry.first.IsScalar()) {
          errors.push_back(at(entry.first.Mark()) + ": " + section_name + ": a key name must be a plain word");
          continue;
        }
        const std::string key = prefix + YamlScalarText(entry.first.Scalar());
        const int line = entry.first.Mark().line + 1;
        const std::string where = at(entry.first.Mark()) + ": " + Printable(key);
        if (FindOrNull(key) == nullptr) {
          errors.push_back(where + ": unknown key (see `acmetrace config` for the documented keys)");
          continue;
        }
        if (auto [it, inserted] = lines.emplace(key, line); !inserted) {
          errors.push_back(where + ": set twice (first on line " + std::to_string(it->second) + ")");
          continue;
        }
        const YAML::Node& value = entry.second;
        std::string text_value;
        if (value.IsSequence()) {
          bool nested = false;
          for (const auto& item : value) {
            if (item.IsNull()) continue;
            if (!item.IsScalar()) {
              nested = true;
              break;
            }
            if (!text_value.empty()) text_value += ",";
            text_value += YamlScalarText(item.Scalar());
          }
          if (nested) {
            errors.push_back(where + ": a list's items must be plain values");
            continue;
          }
        } else if (value.IsScalar()) {
          text_value = YamlScalarText(value.Scalar());
        } else if (value.IsNull()) {
          text_value = NullText(text, value.Mark(), FindOrNull(key)->type);
        } else {
          errors.push_back(where + ": must be a plain value or a list");
          continue;
        }
        values_[key] = Value{std::move(text_value), where};
      }
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7 gives this one the message "bad file".
    errors.push_back(at(e.mark) + ": nested too deeply");
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports where it noticed the error; its messages are one short line.
    errors.push_back(at(e.mark) + ": " + Printable(e.msg, 200));
  } catch (const std::exception& e) {
    errors.push_back(origin + ": cannot parse: " + Printable(e.what(), 200));
  }
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
  return Status::Error(message);
}

std::string Config::EnvName(std::string_view key) {
  std::string out = "ACMETRACE_";
  for (const char c : key) {
    const unsigned char u = static_cast<unsigned char>(c);
    out += std::isalnum(u) != 0 && u < 0x80 ? static_cast<char>(std::toupper(u)) : '_';
  }
  return out;
}

Status Config::ApplyEnvironment(const char* const* envp, const std::vector<std::string>& not_config) {
  if (envp == nullptr) return Status::Ok();
  std::map<std::string, std::string, std::less<>> by_env;  // variable -> key
  std::vector<std::string> section_prefixes;
  for (const ConfigKey& k : keys_) {
    by_env.emplace(EnvName(k.key), k.key);
    const std::string prefix = EnvName(k.key.substr(0, k.key.find('.'))) + "_";
    if (section_prefixes.empty() || section_prefixes.back() != prefix) section_prefixes.push_back(prefix);
  }
  std::vector<std::string> errors;
  for (const char* const* e = envp; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.rfind("ACMETRACE_", 0) != 0) continue;
    const size_t eq = entry.find('=');
    const std::string_view name = entry.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : entry.substr(eq + 1);
    if (auto it = by_env.find(name); it != by_env.end()) {
      values_[it->second] = Value{std::string(value), std::string(name)};
      continue;
    }
    if (std::find(not_config.begin(), not_config.end(), name) != not_config.end()) continue;
    for (const std::string& prefix : section_prefixes) {
      if (name.rfind(prefix, 0) == 0) {
        errors.push_back(Printable(name) + ": no such configuration key (see `acmetrace config`)");
        break;
      }
    }
  }
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
  return Status::Error(message);
}

Status Config::Set(const std::string& key, const std::string& value, const std::string& origin) {
  if (FindOrNull(key) == nullptr) return Status::Error((origin.empty() ? key : origin) + ": unknown config key " + key);
  values_[key] = Value{value, origin};
  return Status::Ok();
}

std::vector<std::string> Config::Validate() const {
  std::vector<std::string> errors;
  for (const ConfigKey& k : keys_) {
    if (std::optional<std::string> why = k.type.Check(values_.at(k.key).text)) {
      errors.push_back(Where(k.key) + ": " + *why);
    }
  }
  return errors;
}

std::string Config::Where(const std::string& key) const {
  Find(key);
  const Value& v = values_.at(key);
  return v.where.empty() ? key : v.where;
}

void Config::RequireValid(const std::string& key) const {
  const ConfigKey& k = Find(key);
  if (std::optional<std::string> why = k.type.Check(values_.at(key).text)) {
    throw std::invalid_argument(Where(key) + ": " + *why);
  }
}

void Config::RequireValidSection(std::string_view section) const {
  for (const ConfigKey& k : keys_) {
    const bool in_section = k.key.size() > section.size() && k.key[section.size()] == '.' &&
                            k.key.compare(0, section.size(), section) == 0;
    if (in_section) {
      RequireValid(k.key);
    }
  }
}

std::string Config::GetString(const std::string& key) const {
  Find(key);
  return values_.at(key).text;
}

int64_t Config::GetInt(const std::string& key) const {
  const std::string v = GetString(key);
  std::optional<int64_t> parsed = ParseInteger(v);
  if (!parsed) throw std::invalid_argument(Where(key) + ": not an integer: " + QuoteConfigValue(v));
  return *parsed;
}

double Config::GetDouble(const std::string& key) const {
  const std::string v = GetString(key);
  std::optional<double> parsed = ParseDouble(v);
  if (!parsed || !std::isfinite(*parsed)) {
    throw std::invalid_argument(Where(key) + ": not a number: " + QuoteConfigValue(v));
  }
  return *parsed;
}

bool Config::GetBool(const std::string& key) const {
  const std::string v = GetString(key);
  std::optional<bool> parsed = ParseBool(v);
  if (!parsed) throw std::invalid_argument(Where(key) + ": not a boolean (true or false): " + QuoteConfigValue(v));
  return *parsed;
}

std::vector<std::string> Config::GetList(const std::string& key) const { return SplitConfigList(GetString(key)); }

std::string Config::DocumentedYaml(Values values) const {
  std::string out =
      "# acmetrace configuration: every key with its default (generated by `acmetrace config`).\n"
      "# Precedence: a command-line flag > an environment variable > this file > the default.\n"
      "# Every key has a variable: ACMETRACE_<SECTION>_<KEY> in upper case, with dots and other\n"
      "# non-alphanumerics as underscores (ACMETRACE_REPLAY_SPEED, ACMETRACE_DETECT_GPU_OVERHEAT_OPEN_C).\n"
      "# Every value is checked against its type at start-up; unknown keys are an error.\n";
  std::string section;
  for (const ConfigKey& k : keys_) {
    const std::string s = k.key.substr(0, k.key.find('.'));
    if (s != section) {
      section = s;
      out += "\n" + section + ":\n";
    }
    out += "  # " + k.help + "\n";
    out += "  # (" + k.type.Describe() + ")\n";
    std::string value = k.default_value;
    if (values == Values::kEffective) {
      const Value& now = values_.at(k.key);
      if (!now.where.empty()) {
        out += "  # set by " + Where(k.key) + " (default: " + (k.default_value.empty() ? "\"\"" : k.default_value) + ")\n";
        value = now.text;
      }
    }
    if (value.empty()) value = "\"\"";
    out += "  " + k.key.substr(k.key.find('.') + 1) + ": " + value + "\n";
  }
  return out;
}

}  // namespace acmetrace::core
