// Loading Prometheus rule files (yaml-cpp) with errors that name file, line and field.
#include "acmetrace/scoring/rule_file.h"

#include <simdjson.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/utf8.h"

namespace acmetrace::scoring {

namespace {

struct Unit {
  std::string_view suffix;
  int64_t ms;
};
// Prometheus's order (model.ParseDuration): each unit at most once, largest first. "ms" is tried
// before "m" at the same position.
constexpr Unit kUnits[] = {{"y", 365LL * 24 * 3600 * 1000}, {"w", 7LL * 24 * 3600 * 1000}, {"d", 24LL * 3600 * 1000},
                           {"h", 3600LL * 1000},           {"m", 60LL * 1000},              {"s", 1000},
                           {"ms", 1}};

std::string Where(const std::string& path, const YAML::Node& node) {
  return path + ":" + std::to_string(node.Mark().line + 1);
}

core::Status FieldError(const std::string& path, const YAML::Node& node, std::string_view field,
                        std::string_view reason) {
  return core::Status::Error(Where(path, node) + ": " + std::string(field) + ": " + std::string(reason));
}

bool IsScalarString(const YAML::Node& node) { return node.IsScalar(); }

// A scalar's value as Prometheus reads it.
std::string Text(const YAML::Node& scalar) { return core::YamlScalarText(scalar.Scalar()); }

// Prometheus's model.IsValidMetricName and LabelName.IsValid (the legacy ASCII names promtool checks).
bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) { return IsMetricName(s) && s.find(':') == std::string_view::npos; }

// Text from the file (or a yaml-cpp message, which may quote it) in an error: one line of bounded
// size, as core::QuotedValue cuts and escapes it, without its quotes.
std::string Echo(std::string_view text) {
  const std::string quoted = core::QuotedValue(text);
  const size_t close = quoted.rfind('\'');
  return quoted.substr(1, close - 1) + quoted.substr(close + 1);
}

// Why a map's key is refused, or "" for a plain scalar. A key such as `? [a, b]` is a sequence: it has
// no name, and yaml-cpp would throw on reading it as one.
struct KeyOrError {
  std::string key;
  core::Status error = core::Status::Ok();
};
KeyOrError KeyOf(const std::string& path, const YAML::Node& key, std::string_view where) {
  if (!key.IsScalar()) {
    return {"", FieldError(path, key, where, "a key must be a plain name, not a list or a map")};
  }
  return {Text(key), core::Status::Ok()};
}

// The keys of one map, each read with KeyOf and allowed once: Prometheus reads rule files strictly,
// a key given twice is an error, not "the last one wins".
class KeysOnce {
 public:
  KeysOnce(const std::string& path, std::string_view where) : path_(path), where_(where) {}
  // The name of key into name, or why it is refused.
  core::Status Read(const YAML::Node& key, std::string& name) {
    KeyOrError k = KeyOf(path_, key, where_);
    if (!k.error.ok()) return k.error;
    name = std::move(k.key);
    if (auto [it, added] = seen_.emplace(name, key.Mark().line + 1); !added) {
      return FieldError(path_, key, Echo(name), "given twice (first on line " + std::to_string(it->second) + ")");
    }
    return core::Status::Ok();
  }

 private:
  const std::string& path_;
  std::string_view where_;
  std::map<std::string, int> seen_;  // key -> line
};

}  // namespace

core::Result<int64_t> ParseDurationMs(std::string_view text) {
  if (text.empty()) return core::Status::Error("empty duration");
  if (text == "0") return int64_t{0};
  int64_t total = 0;
  size_t pos = 0;
  int next_unit = 0;  // units must come in order, each once
  while (pos < text.size()) {
    int64_t value = 0;
    if (!std::isdigit(static_cast<unsigned char>(text[pos]))) {
      return core::Status::Error("not a duration: " + core::QuotedValue(text) + " (use e.g. 30s, 1m30s, 1h, 0s)");
    }
    const auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data() + pos) {
      return core::Status::Error("not a duration: " + core::QuotedValue(text) + " (use e.g. 30s, 1m30s, 1h, 0s)");
    }
    pos = static_cast<size_t>(end - text.data());
    int found = -1;
    // "ms" before "m": the longest suffix that matches at this position.
    for (int u = next_unit; u < static_cast<int>(std::size(kUnits)); ++u) {
      if (text.substr(pos, kUnits[u].suffix.size()) == kUnits[u].suffix &&
          !(kUnits[u].suffix == "m" && text.substr(pos, 2) == "ms")) {
        found = u;
        break;
      }
    }
    if (found < 0) {
      return core::Status::Error("not a duration: " + core::QuotedValue(text) +
                                 " (units y w d h m s ms, largest first, each once)");
    }
    if (value > (INT64_MAX / 2 - total) / kUnits[found].ms) {
      return core::Status::Error("duration too long: " + core::QuotedValue(text));
    }
    total += value * kUnits[found].ms;
    pos += kUnits[found].suffix.size();
    next_unit = found + 1;
  }
  return total;
}

std::string FormatDuration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  for (const Unit& u : kUnits) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms);
      out += u.suffix;
      ms %= u.ms;
    }
  }
  return out;
}

core::Result<RuleFileText> ReadRuleFile(const std::string& path) {
  // Only a regular file of a rule file's size: a symlink to /dev/zero would be read until memory ran
  // out, and a FIFO would hang (opened without blocking, so that even its open does not wait).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return core::Status::Error(path + ": cannot open the rule file: " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return core::Status::Error(path + ": " + (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") +
                               ", not a rule file");
  }
  if (st.st_size > kMaxRuleFileBytes) {
    return core::Status::Error(path + ": " + std::to_string(st.st_size) + " bytes, more than a rule file's limit of " +
                               std::to_string(kMaxRuleFileBytes));
  }
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return core::Status::Error(path + ": cannot read the rule file: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > static_cast<size_t>(kMaxRuleFileBytes)) {  // it grew while read
      return core::Status::Error(path + ": more than a rule file's limit of " + std::to_string(kMaxRuleFileBytes) +
                                 " bytes");
    }
  }
  return RuleFileText{path, std::move(text)};
}

core::Status LoadRuleFile(const std::string& path, RuleSet& out, int64_t default_interval_ms) {
  core::Result<RuleFileText> file = ReadRuleFile(path);
  if (!file.ok()) return file.status();
  return LoadRuleText(file.value(), out, default_interval_ms);
}

namespace {

// Every node's tag is one Prometheus's reader gives the same meaning as yaml-cpp: of YAML's own tags, only the one
// of the node's kind (`!!str`, `!!map`, `!!seq`); others mean something else there (`!!binary` is decoded from
// base64, `!!null x` refused) and nothing here. Local tags (`!x`) are ignored by both. Run on a file whose
// structure is checked: it walks only what the parser reads (an alias is walked where it is used, as read).
core::Status CheckTags(const std::string& path, const YAML::Node& node) {
  constexpr std::string_view kCore = "tag:yaml.org,2002:";
  const std::string& tag = node.Tag();
  const char* own = node.IsScalar() ? "str" : node.IsMap() ? "map" : "seq";  // yaml-cpp: `!!null` is a scalar
  if (tag.rfind(kCore, 0) == 0 && tag.substr(kCore.size()) != own) {
    return core::Status::Error(Where(path, node) + ": yaml: the tag !!" + Echo(tag.substr(kCore.size())) +
                               " is not read here as Prometheus reads it: write the value without it");
  }
  if (node.IsMap()) {
    for (const auto& kv : node) {
      if (core::Status s = CheckTags(path, kv.first); !s.ok()) return s;
      if (core::Status s = CheckTags(path, kv.second); !s.ok()) return s;
    }
  } else if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      if (core::Status s = CheckTags(path, item); !s.ok()) return s;
    }
  }
  return core::Status::Ok();
}

// The rule file's groups into parsed; yaml-cpp may throw (LoadRuleText catches what it throws).
core::Status ParseRuleYaml(const std::string& path, const std::string& text, RuleSet& parsed,
                           int64_t default_interval_ms) {
  const YAML::Node root = YAML::Load(text);
  if (!root.IsMap()) return core::Status::Error(path + ":1: groups: a rule file is a map with a `groups` list");
  KeysOnce top_keys(path, "groups");
  for (const auto& top : root) {
    std::string key;
    if (core::Status s = top_keys.Read(top.first, key); !s.ok()) return s;
    if (key != "groups") return FieldError(path, top.first, Echo(key), "unknown field (a rule file has only `groups`)");
  }
  const YAML::Node groups = root["groups"];
  if (!groups.IsSequence()) return FieldError(path, groups, "groups", "must be a list of groups");
  std::map<std::string, int> group_lines;  // name -> line: promtool refuses a name used twice in a file
  for (const YAML::Node& group : groups) {
    if (!group.IsMap()) return FieldError(path, group, "groups", "each group is a map (name, interval, rules)");
    std::string group_name;
    int64_t interval_ms = default_interval_ms;
    YAML::Node rules;
    KeysOnce group_keys(path, "groups");
    for (const auto& field : group) {
      std::string key;
      if (core::Status s = group_keys.Read(field.first, key); !s.ok()) return s;
      const YAML::Node& value = field.second;
      if (key == "name") {
        if (!IsScalarString(value) || Text(value).empty()) {
          return FieldError(path, value, "name", "a group needs a non-empty name");
        }
        group_name = Text(value);
        if (auto [it, added] = group_lines.emplace(group_name, value.Mark().line + 1); !added) {
          return FieldError(path, value, "name",
                            "group \"" + Echo(group_name) + "\" is repeated in the same file (first on line " +
                                std::to_string(it->second) + ")");
        }
      } else if (key == "interval") {
        if (!IsScalarString(value)) return FieldError(path, value, "interval", "must be a duration");
        core::Result<int64_t> d = ParseDurationMs(Text(value));
        if (!d.ok()) return FieldError(path, value, "interval", d.status().message());
        if (d.value() < kMinGroupIntervalMs) {
          return FieldError(path, value, "interval",
                            Text(value) + " is below the minimum of " + FormatDuration(kMinGroupIntervalMs));
        }
        interval_ms = d.value();
      } else if (key == "rules") {
        rules = value;
      } else if (key == "limit") {  // accepted by Prometheus; nothing to score
        if (!value.IsScalar()) return FieldError(path, value, "limit", "must be a number");
      } else if (key == "source_tenants") {
        bool names = value.IsSequence();
        for (size_t i = 0; names && i < value.size(); ++i) names = value[i].IsScalar();
        if (!names) return FieldError(path, value, "source_tenants", "must be a list of tenant names");
      } else {
        return FieldError(path, field.first, Echo(key), "unknown field of a group (name, interval, limit, rules)");
      }
    }
    if (group_name.empty()) return FieldError(path, group, "name", "a group needs a name");
    if (!rules.IsDefined() || rules.IsNull()) continue;
    if (!rules.IsSequence()) return FieldError(path, rules, "rules", "must be a list of rules");
    for (const YAML::Node& rule : rules) {
      if (!rule.IsMap()) return FieldError(path, rule, "rules", "each rule is a map (alert or record, expr, ...)");
      AlertRule alert;
      alert.group = group_name;
      alert.file = path;
      alert.line = rule.Mark().line + 1;
      alert.interval_ms = interval_ms;
      std::string record;
      bool has_expr = false;
      KeysOnce rule_keys(path, "rules");
      for (const auto& field : rule) {
        std::string key;
        if (core::Status s = rule_keys.Read(field.first, key); !s.ok()) return s;
        const YAML::Node& value = field.second;
        auto duration = [&](int64_t& into) -> core::Status {
          if (!IsScalarString(value)) return FieldError(path, value, key, "must be a duration");
          core::Result<int64_t> d = ParseDurationMs(Text(value));
          if (!d.ok()) return FieldError(path, value, key, d.status().message());
          into = d.value();
          return core::Status::Ok();
        };
        if (key == "alert") {
          if (!IsScalarString(value) || Text(value).empty()) {
            return FieldError(path, value, "alert", "must be a non-empty name");
          }
          alert.name = Text(value);
        } else if (key == "record") {
          if (!IsScalarString(value) || !IsMetricName(Text(value))) {
            return FieldError(path, value, "record", "must be a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
          }
          record = Text(value);
        } else if (key == "expr") {
          if (!IsScalarString(value) || Text(value).empty()) {
            return FieldError(path, value, "expr", "must be a non-empty PromQL expression");
          }
          alert.expr = Text(value);
          has_expr = true;
        } else if (key == "for") {
          if (core::Status s = duration(alert.for_ms); !s.ok()) return s;
        } else if (key == "keep_firing_for") {
          if (core::Status s = duration(alert.keep_firing_for_ms); !s.ok()) return s;
        } else if (key == "labels") {
          if (value.IsNull()) continue;
          if (!value.IsMap()) return FieldError(path, value, "labels", "must be a map of label names to values");
          KeysOnce label_keys(path, "labels");
          for (const auto& label : value) {
            std::string name;
            if (core::Status s = label_keys.Read(label.first, name); !s.ok()) return s;
            if (!IsLabelName(name)) {
              return FieldError(path, label.first, "labels",
                                Echo(name) + " is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)");
            }
            if (name == "__name__") {
              return FieldError(path, label.first, "labels", "__name__ is the metric's name, not a label a rule sets");
            }
            if (!label.second.IsScalar()) return FieldError(path, label.second, "labels." + name, "must be a string");
            alert.labels[name] = Text(label.second);
          }
        } else if (key == "annotations") {
          if (!value.IsNull() && !value.IsMap()) return FieldError(path, value, "annotations", "must be a map");
          if (value.IsMap()) {
            // Annotation names are label names to Prometheus (rulefmt: "invalid annotation name").
            for (const auto& annotation : value) {
              KeyOrError name = KeyOf(path, annotation.first, "annotations");
              if (!name.error.ok()) return name.error;
              if (!IsLabelName(name.key)) {
                return FieldError(path, annotation.first, "annotations",
                                  Echo(name.key) + " is not an annotation name ([a-zA-Z_][a-zA-Z0-9_]*)");
              }
              if (!annotation.second.IsScalar()) {
                return FieldError(path, annotation.second, "annotations." + name.key, "must be a string");
              }
            }
          }
        } else {
          return FieldError(path, field.first, Echo(key),
                            "unknown field of a rule (alert, record, expr, for, keep_firing_for, labels, annotations)");
        }
      }
      const YAML::Node at = rule;
      if (alert.name.empty() == record.empty()) {
        return FieldError(path, at, "alert", "a rule has exactly one of `alert` and `record`");
      }
      if (!has_expr) return FieldError(path, at, "expr", "missing");
      if (!record.empty()) {
        if (alert.for_ms != 0 || alert.keep_firing_for_ms != 0) {
          return FieldError(path, at, "for", "a recording rule has no for or keep_firing_for");
        }
        parsed.records.push_back({record, group_name, path, alert.line});
      } else {
        parsed.alerts.push_back(std::move(alert));
      }
    }
  }
  return CheckTags(path, root);
}

// The line of text[pos] (1 for the first).
int LineOf(std::string_view text, size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(pos), '\n'));
}

// The characters YAML allows in a stream, as Prometheus's reader (gopkg.in/yaml.v3, readerc.go) checks them:
// tab, line feed, carriage return, U+0020-U+007E, U+0085, U+00A0-U+D7FF, U+E000-U+FFFD and U+10000 up, in UTF-8.
// Of those, U+0085, U+2028 and U+2029 are refused too: line breaks to yaml.v3 (YAML 1.1), not to yaml-cpp (1.2),
// so the two would read a different file.
core::Status CheckYamlCharacters(const std::string& path, std::string_view text) {
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    size_t line_start = 0;
    for (size_t eol; (eol = text.find('\n', line_start)) != std::string_view::npos; line_start = eol + 1) {
      if (!simdjson::validate_utf8(text.data() + line_start, eol - line_start)) break;
    }
    return core::Status::Error(path + ":" + std::to_string(LineOf(text, line_start)) + ": not UTF-8");
  }
  for (size_t i = 0; i < text.size();) {
    const core::CodePoint cp = core::NextCodePoint(text, i).value();  // UTF-8: checked above
    const uint32_t c = cp.value;
    std::string reason;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || (c >= 0x7f && c < 0xa0 && c != 0x85) ||
        c == 0xfffe || c == 0xffff) {
      reason = " is not allowed in YAML (nor any control character but tab and line breaks)";
    } else if (c == 0x85 || c == 0x2028 || c == 0x2029) {
      const char* escape = c == 0x85 ? "\\N" : c == 0x2028 ? "\\L" : "\\P";
      reason = std::string(" is a line break to Prometheus's YAML reader, not to acmetrace's: write it as ") + escape +
               " in double quotes";
    }
    if (!reason.empty()) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
      return core::Status::Error(path + ":" + std::to_string(LineOf(text, i)) + ": character " + code + reason);
    }
    i += cp.length;
  }
  return core::Status::Ok();
}

}  // namespace

core::Status LoadRuleText(const RuleFileText& file, RuleSet& out, int64_t default_interval_ms) {
  const std::string& path = file.name;
  auto at = [&path](const YAML::Mark& mark) {
    return mark.line >= 0 ? path + ":" + std::to_string(mark.line + 1) : path;
  };
  // YAML is UTF-8 without control characters (Prometheus's YAML reader refuses both); yaml-cpp reads such bytes as
  // they come, and a copy written back (acmetrace rules) would not say the same (found by rule_scaler_fuzz).
  if (core::Status s = CheckYamlCharacters(path, file.text); !s.ok()) return s;
  RuleSet parsed;
  core::Status status = core::Status::Ok();
  // Every exception yaml-cpp throws stops here: a key that is a list read as a name
  // (TypedBadConversion), syntax errors (ParserException), nesting (DeepRecursion), and anything else.
  try {
    status = ParseRuleYaml(path, file.text, parsed, default_interval_ms);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7 gives this one the message "bad file".
    status = core::Status::Error(at(e.mark) + ": yaml: nested too deeply");
  } catch (const YAML::Exception& e) {
    status = core::Status::Error(at(e.mark) + ": yaml: " + Echo(e.msg));
  } catch (const std::exception& e) {
    status = core::Status::Error(path + ": cannot parse the rule file: " + Echo(e.what()));
  }
  if (!status.ok()) return status;
  for (AlertRule& a : parsed.alerts) out.alerts.push_back(std::move(a));
  for (RecordingRule& r : parsed.records) out.records.push_back(std::move(r));
  return core::Status::Ok();
}

namespace {

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

}  // namespace

std::set<std::string> KindsOfRule(const AlertRule& rule, const std::set<std::string>& known_kinds) {
  std::set<std::string> kinds;
  if (auto it = rule.labels.find("kind"); it != rule.labels.end()) {
    kinds.insert(it->second);
    return kinds;
  }
  const std::string& e = rule.expr;
  for (size_t pos = e.find("kind"); pos != std::string::npos; pos = e.find("kind", pos + 4)) {
    if (pos > 0 && IsNameChar(e[pos - 1])) continue;
    size_t p = pos + 4;
    while (p < e.size() && e[p] == ' ') ++p;
    bool regex = false;
    if (e.compare(p, 2, "=~") == 0) {
      regex = true;
      p += 2;
    } else if (p < e.size() && e[p] == '=' && e.compare(p, 2, "==") != 0) {
      p += 1;
    } else {
      continue;
    }
    while (p < e.size() && e[p] == ' ') ++p;
    if (p >= e.size() || (e[p] != '"' && e[p] != '\'')) continue;
    const char quote = e[p];
    const size_t close = e.find(quote, p + 1);
    if (close == std::string::npos) continue;
    const std::string value = e.substr(p + 1, close - p - 1);
    std::vector<std::string> parts;
    if (regex) {
      size_t start = 0;
      while (true) {
        const size_t bar = value.find('|', start);
        parts.push_back(value.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
    } else {
      parts.push_back(value);
    }
    for (const std::string& k : parts) {
      if (known_kinds.count(k) > 0) kinds.insert(k);
    }
  }
  return kinds;
}

bool IsCriticalRule(const AlertRule& rule) {
  auto it = rule.labels.find("severity");
  return it != rule.labels.end() && it->second == "critical";
}

std::vector<std::string> RecordingRulesUsed(const AlertRule& rule, const RuleSet& rules) {
  std::vector<std::string> used;
  for (const RecordingRule& r : rules.records) {
    for (size_t pos = rule.expr.find(r.name); pos != std::string::npos; pos = rule.expr.find(r.name, pos + 1)) {
      const size_t end = pos + r.name.size();
      const bool starts = pos == 0 || !IsNameChar(rule.expr[pos - 1]);
      const bool ends = end == rule.expr.size() || !IsNameChar(rule.expr[end]);
      if (starts && ends) {
        used.push_back(r.name);
        break;
      }
    }
  }
  return used;
}

}  // namespace acmetrace::scoring
