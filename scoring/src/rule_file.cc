// Loading Prometheus rule files (yaml-cpp) with errors that name file, line and field.
#include "acmetrace/scoring/rule_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

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
      return core::Status::Error("not a duration: \"" + std::string(text) + "\" (use e.g. 30s, 1m30s, 1h, 0s)");
    }
    const auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data() + pos) {
      return core::Status::Error("not a duration: \"" + std::string(text) + "\" (use e.g. 30s, 1m30s, 1h, 0s)");
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
      return core::Status::Error("not a duration: \"" + std::string(text) +
                                 "\" (units y w d h m s ms, largest first, each once)");
    }
    if (value > (INT64_MAX / 2 - total) / kUnits[found].ms) {
      return core::Status::Error("duration too long: \"" + std::string(text) + "\"");
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return core::Status::Error(path + ": a directory, not a rule file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Status::Error(path + ": cannot open the rule file");
  std::ostringstream text;
  text << in.rdbuf();
  return RuleFileText{path, text.str()};
}

core::Status LoadRuleFile(const std::string& path, RuleSet& out, int64_t default_interval_ms) {
  core::Result<RuleFileText> file = ReadRuleFile(path);
  if (!file.ok()) return file.status();
  return LoadRuleText(file.value(), out, default_interval_ms);
}

core::Status LoadRuleText(const RuleFileText& file, RuleSet& out, int64_t default_interval_ms) {
  const std::string& path = file.name;
  YAML::Node root;
  try {
    root = YAML::Load(file.text);
  } catch (const YAML::Exception& e) {
    return core::Status::Error(path + ":" + std::to_string(e.mark.line + 1) + ": yaml: " + e.msg);
  }
  if (!root.IsMap()) return core::Status::Error(path + ":1: groups: a rule file is a map with a `groups` list");
  for (const auto& top : root) {
    const std::string key = top.first.as<std::string>();
    if (key != "groups") return FieldError(path, top.first, key, "unknown field (a rule file has only `groups`)");
  }
  const YAML::Node groups = root["groups"];
  if (!groups.IsSequence()) return FieldError(path, groups, "groups", "must be a list of groups");
  RuleSet parsed;
  for (const YAML::Node& group : groups) {
    if (!group.IsMap()) return FieldError(path, group, "groups", "each group is a map (name, interval, rules)");
    std::string group_name;
    int64_t interval_ms = default_interval_ms;
    YAML::Node rules;
    for (const auto& field : group) {
      const std::string key = field.first.as<std::string>();
      const YAML::Node& value = field.second;
      if (key == "name") {
        if (!IsScalarString(value) || value.as<std::string>().empty()) {
          return FieldError(path, value, "name", "a group needs a non-empty name");
        }
        group_name = value.as<std::string>();
      } else if (key == "interval") {
        if (!IsScalarString(value)) return FieldError(path, value, "interval", "must be a duration");
        core::Result<int64_t> d = ParseDurationMs(value.as<std::string>());
        if (!d.ok()) return FieldError(path, value, "interval", d.status().message());
        if (d.value() <= 0) return FieldError(path, value, "interval", "must be more than 0s");
        interval_ms = d.value();
      } else if (key == "rules") {
        rules = value;
      } else if (key == "limit" || key == "source_tenants") {
        // Accepted by Prometheus; nothing to score.
      } else {
        return FieldError(path, field.first, key, "unknown field of a group (name, interval, limit, rules)");
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
      for (const auto& field : rule) {
        const std::string key = field.first.as<std::string>();
        const YAML::Node& value = field.second;
        auto duration = [&](int64_t& into) -> core::Status {
          if (!IsScalarString(value)) return FieldError(path, value, key, "must be a duration");
          core::Result<int64_t> d = ParseDurationMs(value.as<std::string>());
          if (!d.ok()) return FieldError(path, value, key, d.status().message());
          into = d.value();
          return core::Status::Ok();
        };
        if (key == "alert") {
          if (!IsScalarString(value) || value.as<std::string>().empty()) {
            return FieldError(path, value, "alert", "must be a non-empty name");
          }
          alert.name = value.as<std::string>();
        } else if (key == "record") {
          if (!IsScalarString(value) || value.as<std::string>().empty()) {
            return FieldError(path, value, "record", "must be a non-empty metric name");
          }
          record = value.as<std::string>();
        } else if (key == "expr") {
          if (!IsScalarString(value) || value.as<std::string>().empty()) {
            return FieldError(path, value, "expr", "must be a non-empty PromQL expression");
          }
          alert.expr = value.as<std::string>();
          has_expr = true;
        } else if (key == "for") {
          if (core::Status s = duration(alert.for_ms); !s.ok()) return s;
        } else if (key == "keep_firing_for") {
          if (core::Status s = duration(alert.keep_firing_for_ms); !s.ok()) return s;
        } else if (key == "labels") {
          if (value.IsNull()) continue;
          if (!value.IsMap()) return FieldError(path, value, "labels", "must be a map of label names to values");
          for (const auto& label : value) {
            if (!label.second.IsScalar()) {
              return FieldError(path, label.second, "labels." + label.first.as<std::string>(), "must be a string");
            }
            alert.labels[label.first.as<std::string>()] = label.second.as<std::string>();
          }
        } else if (key == "annotations") {
          if (!value.IsNull() && !value.IsMap()) return FieldError(path, value, "annotations", "must be a map");
        } else {
          return FieldError(path, field.first, key,
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
