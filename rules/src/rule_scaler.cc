// Time-scaling of Prometheus rule files: a PromQL lexer for the spans in expressions, yaml-cpp for the rest.
#include "acmetrace/rules/rule_scaler.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/utf8.h"

namespace acmetrace::rules {

namespace {

// Text from the file in a warning: one line of bounded size, as core::QuotedValue cuts and escapes it, without its
// quotes.
std::string OneLine(std::string_view text) {
  const std::string quoted = core::QuotedValue(text);
  const size_t close = quoted.rfind('\'');
  return quoted.substr(1, close - 1) + quoted.substr(close + 1);
}

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || std::isdigit(static_cast<unsigned char>(c)); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Functions whose value is the wall clock (Prometheus stamps the replayed samples "now"): no speed
// makes them the trace's 2023 time.
const std::set<std::string>& WallClockFunctions() {
  static const std::set<std::string> k = {"time", "timestamp", "day_of_month", "day_of_week", "day_of_year",
                                          "days_in_month", "hour", "minute", "month", "year"};
  return k;
}

// Functions per second of wall time: a counter replayed N times faster grows N times faster.
const std::set<std::string>& PerSecondFunctions() {
  static const std::set<std::string> k = {"rate", "irate", "deriv"};
  return k;
}

// The end of the string literal opened at text[open] (one past its closing quote, or text.size() if it
// is never closed: copied as it is, Prometheus will say what is wrong with it).
size_t StringEnd(std::string_view text, size_t open) {
  const char quote = text[open];
  size_t i = open + 1;
  while (i < text.size()) {
    if (quote != '`' && text[i] == '\\') {
      i += 2;
      continue;
    }
    if (text[i] == quote) return i + 1;
    ++i;
  }
  return text.size();
}

// A duration literal as PromQL writes one ("5m", "1h30m", "500ms"): digits and unit letters.
size_t DurationTokenEnd(std::string_view text, size_t pos) {
  size_t i = pos;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  return i;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// What an expression is being scaled into, and the warnings said so far (each once).
class ExpressionScaler {
 public:
  ExpressionScaler(std::string_view expr, double speed) : expr_(expr), speed_(speed) {}

  core::Result<ScaledExpression> Run() {
    size_t i = 0;
    while (i < expr_.size()) {
      const char c = expr_[i];
      if (c == '"' || c == '\'' || c == '`') {
        const size_t end = StringEnd(expr_, i);
        out_.append(expr_.substr(i, end - i));
        i = end;
      } else if (c == '#') {  // a comment runs to the end of the line
        size_t end = expr_.find('\n', i);
        if (end == std::string_view::npos) end = expr_.size();
        out_.append(expr_.substr(i, end - i));
        i = end;
      } else if (c == '[') {
        core::Result<size_t> next = Bracket(i);
        if (!next.ok()) return next.status();
        i = next.value();
      } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < expr_.size() &&
                                                                 std::isdigit(static_cast<unsigned char>(expr_[i + 1])))) {
        // A number (1e3, 0x1f, 1.5) is copied whole, so that its letters are not read as a name.
        const size_t end = DurationTokenEnd(expr_, i);
        out_.append(expr_.substr(i, end - i));
        i = end;
      } else if (IsIdentStart(c)) {
        core::Result<size_t> next = Identifier(i);
        if (!next.ok()) return next.status();
        i = next.value();
      } else if (c == '@') {
        Warn(AtModifierWarning(i));
        out_.push_back(c);
        ++i;
      } else {
        out_.push_back(c);
        ++i;
      }
    }
    return ScaledExpression{std::move(out_), std::move(warnings_)};
  }

 private:
  void Warn(const std::string& warning) {
    if (seen_.insert(warning).second) warnings_.push_back(warning);
  }

  // The spans of an `@` modifier are absolute: nothing to divide.
  std::string AtModifierWarning(size_t at) const {
    size_t p = at + 1;
    while (p < expr_.size() && IsSpace(expr_[p])) ++p;
    const size_t end = DurationTokenEnd(expr_, p);
    const std::string what = Lower(expr_.substr(p, end - p));
    if (what == "start" || what == "end") {
      return "@ " + what + "() pins the evaluation to the query range's " + what +
             ", which speed does not move: left as it is";
    }
    return "the @ modifier pins an absolute (wall-clock) time, not a span: left as it is";
  }

  core::Result<std::string> Scaled(std::string_view duration, bool* ok) {
    core::Result<int64_t> ms = scoring::ParseDurationMs(duration);
    *ok = ms.ok();
    if (!ms.ok()) return std::string(duration);
    core::Result<ScaledDuration> scaled = ScaleDurationMs(ms.value(), speed_);
    if (!scaled.ok()) return core::Status::Error(std::string(duration) + ": " + scaled.status().message());
    if (!scaled.value().rounding.empty()) Warn(std::string(duration) + " " + scaled.value().rounding);
    return scoring::FormatDuration(scaled.value().ms);
  }

  // `[range]` or `[range:step]` / `[range:]` at expr_[open]; returns where to go on.
  core::Result<size_t> Bracket(size_t open) {
    const size_t close = expr_.find(']', open + 1);
    if (close == std::string_view::npos) {  // not PromQL: copied, Prometheus will refuse it
      out_.append(expr_.substr(open));
      return expr_.size();
    }
    const std::string_view inside = expr_.substr(open + 1, close - open - 1);
    const size_t colon = inside.find(':');
    const std::string_view range = Trim(inside.substr(0, colon));
    bool range_ok = false;
    core::Result<std::string> new_range = Scaled(range, &range_ok);
    if (!new_range.ok()) return new_range.status();
    std::string rewritten = "[" + new_range.value();
    bool step_ok = true;
    if (colon != std::string_view::npos) {
      const std::string_view step = Trim(inside.substr(colon + 1));
      rewritten += ":";
      if (!step.empty()) {  // an empty step is the evaluation interval, scaled in prometheus.yml
        core::Result<std::string> new_step = Scaled(step, &step_ok);
        if (!new_step.ok()) return new_step.status();
        rewritten += new_step.value();
      }
    }
    rewritten += "]";
    if (!range_ok || !step_ok) {
      Warn("[" + OneLine(inside) + "] is not a range of Prometheus durations: left as it is");
      out_.append(expr_.substr(open, close + 1 - open));
    } else {
      out_ += rewritten;
    }
    return close + 1;
  }

  // A name at expr_[start]: `offset DURATION` is scaled, a wall-clock or per-second function warned.
  core::Result<size_t> Identifier(size_t start) {
    size_t end = start;
    while (end < expr_.size() && IsIdentChar(expr_[end])) ++end;
    const std::string_view name = expr_.substr(start, end - start);
    const std::string lower = Lower(name);
    out_.append(name);
    size_t p = end;
    while (p < expr_.size() && IsSpace(expr_[p])) ++p;
    if (lower == "offset") {
      size_t q = p;
      if (q < expr_.size() && (expr_[q] == '-' || expr_[q] == '+')) {
        ++q;
        while (q < expr_.size() && IsSpace(expr_[q])) ++q;
      }
      if (q < expr_.size() && std::isdigit(static_cast<unsigned char>(expr_[q]))) {
        const size_t token_end = DurationTokenEnd(expr_, q);
        bool ok = false;
        core::Result<std::string> scaled = Scaled(expr_.substr(q, token_end - q), &ok);
        if (!scaled.ok()) return scaled.status();
        if (!ok) Warn("offset " + std::string(expr_.substr(q, token_end - q)) + " is not a Prometheus duration: left as it is");
        out_.append(expr_.substr(end, q - end));  // the spaces and the sign, as they were
        out_ += scaled.value();
        return token_end;
      }
      return end;
    }
    if (p < expr_.size() && expr_[p] == '(') {  // a call (a label name is never followed by '(')
      if (WallClockFunctions().count(lower) > 0) {
        Warn(lower + "() reads the wall clock (Prometheus stamps replayed samples now), not the trace's time: "
                     "left as it is");
      } else if (PerSecondFunctions().count(lower) > 0) {
        Warn(lower + "() is per second of wall time: at speed " + FormatSpeed(speed_) + " it is " +
             FormatSpeed(speed_) + " times the trace's rate; scale thresholds on it by hand (a ratio of two is "
             "unchanged)");
      } else if (lower == "predict_linear") {
        Warn("predict_linear()'s second argument is in seconds of wall time: divide it by " + FormatSpeed(speed_) +
             " by hand");
      }
    }
    return end;
  }

  std::string_view expr_;
  double speed_;
  std::string out_;
  std::vector<std::string> warnings_;
  std::set<std::string> seen_;
};

// The comment lines a file starts with (its description), kept in the scaled copy.
std::string LeadingComments(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && text[end] == '#') {
    const size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
  }
  std::string out = text.substr(0, end);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

// A character that yaml-cpp writes and yaml-cpp and Prometheus's reader (yaml.v3) read back as it is, outside
// escapes. Not: controls (DEL and C1 too), the line breaks of YAML 1.1 (U+0085, U+2028, U+2029), the byte order
// mark, and noncharacters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF), which yaml-cpp 0.7's writer turns into U+FFFD.
bool WrittenAsIs(uint32_t c) {
  if (c < 0x80) return c >= 0x20 && c != 0x7f;
  if (c < 0xa0 || c == 0x2028 || c == 0x2029 || c == 0xfeff || (c >= 0xfdd0 && c <= 0xfdef)) return false;
  return (c & 0xfffeu) != 0xfffeu;
}

// Where the copy's own double-quoted scalars go in yaml-cpp's output: yaml-cpp writes this and a number, in double
// quotes, and CopyEmitter::Text puts the scalar there. No scalar that yaml-cpp writes holds it.
constexpr std::string_view kQuotedPlaceholder = "acmetrace-double-quoted-";

// Every character of s is written as it is (or is a line feed, where allowed), and s holds no placeholder.
bool AllWrittenAsIs(std::string_view s, bool line_feeds) {
  if (s.find(kQuotedPlaceholder) != std::string_view::npos) return false;
  for (size_t pos = 0; pos < s.size();) {
    const std::optional<core::CodePoint> cp = core::NextCodePoint(s, pos);
    if (!cp || !(WrittenAsIs(cp->value) || (line_feeds && cp->value == '\n'))) return false;
    pos += cp->length;
  }
  return true;
}

// A multi-line string that a literal block (`|`, which ends its value with one line feed) writes back as it is:
// one final line feed, every other character written as it is, a first line that does not start with a space.
bool FitsLiteralBlock(std::string_view s) {
  if (s.size() < 2 || s.back() != '\n' || s[s.size() - 2] == '\n' || s.front() == ' ' || s.front() == '\n') {
    return false;
  }
  return AllWrittenAsIs(s, true);
}

// s (UTF-8) as a YAML double-quoted scalar on one line: what is not written as it is goes as an escape (\n, \xHH,
// \uHHHH, \UHHHHHHHH), which yaml-cpp and yaml.v3 both decode to the same character. nullopt if s is not UTF-8.
std::optional<std::string> DoubleQuoted(std::string_view s) {
  std::string out = "\"";
  for (size_t pos = 0; pos < s.size();) {
    const std::optional<core::CodePoint> cp = core::NextCodePoint(s, pos);
    if (!cp) return std::nullopt;
    const uint32_t c = cp->value;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else if (WrittenAsIs(c)) {
      out.append(s.substr(pos, cp->length));
    } else {
      char escape[16];
      std::snprintf(escape, sizeof escape, c <= 0xff ? "\\x%02X" : c <= 0xffff ? "\\u%04X" : "\\U%08X", c);
      out += escape;
    }
    pos += cp->length;
  }
  return out + "\"";
}

// Writes a rule file's tree back: block style, multi-line strings as literal blocks, quoted scalars quoted
// again (a label value "1" stays a string), every scalar as Prometheus reads it (core::YamlScalarText).
class CopyEmitter {
 public:
  CopyEmitter() { out_.SetIndent(2); }

  void Emit(const YAML::Node& node) {
    switch (node.Type()) {
      case YAML::NodeType::Map:
        out_ << YAML::BeginMap;
        for (const auto& kv : node) {
          out_ << YAML::Key;
          Emit(kv.first);
          out_ << YAML::Value;
          Emit(kv.second);
        }
        out_ << YAML::EndMap;
        break;
      case YAML::NodeType::Sequence:
        out_ << YAML::BeginSeq;
        for (const YAML::Node& item : node) Emit(item);
        out_ << YAML::EndSeq;
        break;
      case YAML::NodeType::Scalar: {
        const std::string text = core::YamlScalarText(node.Scalar());
        if (FitsLiteralBlock(text)) {
          out_ << YAML::Literal << text;
        } else if (node.Tag() != "?" || !AllWrittenAsIs(text, false)) {  // quoted or tagged !!str: a string
          std::optional<std::string> quoted = DoubleQuoted(text);
          if (!quoted) not_utf8_ = true;
          // yaml-cpp writes a key of more than 1024 characters as `? KEY` (YAML allows no longer implicit key), which
          // it does not know the placeholder stands for; LongKey does nothing to a value.
          if (quoted && quoted->size() > 1024) out_ << YAML::LongKey;
          out_ << YAML::DoubleQuoted << std::string(kQuotedPlaceholder) + std::to_string(quoted_.size());
          quoted_.push_back(std::move(quoted).value_or(""));
        } else {
          out_ << text;
        }
        break;
      }
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        out_ << YAML::Null;
        break;
    }
  }

  // The text written, each placeholder replaced by its scalar; or why there is none.
  core::Result<std::string> Text() const {
    if (!out_.good()) return core::Status::Error(out_.GetLastError());
    if (not_utf8_) return core::Status::Error("a value is not UTF-8");
    const std::string_view emitted = out_.c_str();
    const std::string open = "\"" + std::string(kQuotedPlaceholder);
    std::string text;
    size_t done = 0;
    for (size_t at; (at = emitted.find(open, done)) != std::string_view::npos;) {
      const size_t digits = at + open.size();
      const size_t close = emitted.find('"', digits);
      text.append(emitted.substr(done, at - done));
      text += quoted_.at(std::stoul(std::string(emitted.substr(digits, close - digits))));
      done = close + 1;
    }
    text.append(emitted.substr(done));
    return text;
  }

 private:
  YAML::Emitter out_;
  std::vector<std::string> quoted_;  // the double-quoted scalars, by placeholder number
  bool not_utf8_ = false;
};

// Where a warning or error points: "FILE:LINE: group G, rule R: ".
std::string RulePlace(const std::string& file, const YAML::Node& rule, const std::string& group) {
  std::string name;
  if (rule["alert"]) name = rule["alert"].Scalar();
  if (rule["record"]) name = rule["record"].Scalar();
  return file + ":" + std::to_string(rule.Mark().line + 1) + ": group " + OneLine(group) + ", rule " + OneLine(name) +
         ": ";
}

// Scales the parsed (and already validated) rule file in place; yaml-cpp may throw.
// An alias (`for: *d`, `- *rule`) is the same node as its anchor: yaml-cpp changes it in place for both, so each
// node is scaled once, where it is first met (it was divided by the speed once per use).
core::Status ScaleTree(const std::string& file, YAML::Node& root, double speed, std::vector<std::string>& warnings) {
  // By where each node starts in the file (an alias is its anchor's node, with its anchor's place), then by
  // identity: searching a list of every node scaled made a file of many rules take time quadratic in their number.
  std::map<int, std::vector<YAML::Node>> scaled_nodes;
  auto first_time = [&scaled_nodes](const YAML::Node& node) {
    std::vector<YAML::Node>& at = scaled_nodes[node.Mark().pos];
    for (const YAML::Node& seen : at) {
      if (seen.is(node)) return false;
    }
    at.push_back(node);
    return true;
  };
  YAML::Node groups = root["groups"];
  for (YAML::Node group : groups) {
    const std::string group_name = group["name"].Scalar();
    if (YAML::Node interval = group["interval"]; interval && first_time(interval)) {
      const int64_t ms = scoring::ParseDurationMs(interval.Scalar()).value();  // validated
      core::Result<ScaledDuration> scaled = ScaleDurationMs(ms, speed);
      const std::string place =
          file + ":" + std::to_string(interval.Mark().line + 1) + ": group " + OneLine(group_name) + ": ";
      if (!scaled.ok()) return core::Status::Error(place + "interval: " + scaled.status().message());
      if (!scaled.value().rounding.empty()) {
        warnings.push_back(place + "interval " + interval.Scalar() + " " + scaled.value().rounding);
      }
      group["interval"] = scoring::FormatDuration(scaled.value().ms);
    }
    YAML::Node rules = group["rules"];
    if (!rules.IsSequence()) continue;
    for (YAML::Node rule : rules) {
      const std::string place = RulePlace(file, rule, group_name);
      for (const char* key : {"for", "keep_firing_for"}) {
        YAML::Node value = rule[key];
        if (!value || !first_time(value)) continue;
        const int64_t ms = scoring::ParseDurationMs(value.Scalar()).value();  // validated
        core::Result<ScaledDuration> scaled = ScaleDurationMs(ms, speed);
        if (!scaled.ok()) return core::Status::Error(place + key + ": " + scaled.status().message());
        if (!scaled.value().rounding.empty()) {
          warnings.push_back(place + key + " " + value.Scalar() + " " + scaled.value().rounding);
        }
        rule[key] = scoring::FormatDuration(scaled.value().ms);
      }
      YAML::Node expr = rule["expr"];
      if (!first_time(expr)) continue;
      const std::string text = core::YamlScalarText(expr.Scalar());
      core::Result<ScaledExpression> scaled = ScaleExpression(text, speed);
      if (!scaled.ok()) return core::Status::Error(place + "expr: " + scaled.status().message());
      for (const std::string& w : scaled.value().warnings) warnings.push_back(place + "expr: " + w);
      // The original text when nothing changed: a block scalar's final newline stays as it was.
      if (scaled.value().expr != text) rule["expr"] = scaled.value().expr;
    }
  }
  return core::Status::Ok();
}

}  // namespace

std::string FormatSpeed(double speed) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", speed);
  return text;
}

core::Result<ScaledDuration> ScaleDurationMs(int64_t ms, double speed) {
  if (!(speed > 0) || !std::isfinite(speed)) return core::Status::Error("the speed must be a positive number");
  ScaledDuration out;
  if (ms == 0) return out;
  const double exact = static_cast<double>(ms) / speed;
  if (!(exact < static_cast<double>(kMaxDurationMs))) {
    return core::Status::Error(scoring::FormatDuration(ms) + " / " + FormatSpeed(speed) +
                               " is longer than Prometheus's longest duration (292 years)");
  }
  out.ms = std::llround(exact);
  if (out.ms < 1) {
    out.ms = 1;
    out.rounding = "/ " + FormatSpeed(speed) + " is below a millisecond: raised to 1ms (Prometheus refuses 0)";
  } else if (std::fabs(exact - static_cast<double>(out.ms)) > 1e-6 * std::max(1.0, exact)) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3fms", exact);
    out.rounding = "/ " + FormatSpeed(speed) + " is " + text + ": rounded to " + scoring::FormatDuration(out.ms);
  }
  return out;
}

core::Result<ScaledExpression> ScaleExpression(std::string_view expr, double speed) {
  if (!(speed > 0) || !std::isfinite(speed)) return core::Status::Error("the speed must be a positive number");
  return ExpressionScaler(expr, speed).Run();
}

core::Result<ScaledRuleFile> ScaleRuleFile(const scoring::RuleFileText& file, double speed,
                                           std::string_view source_name) {
  // The scoring parser's checks first (and its handling of every yaml-cpp exception): what passes them
  // is a well-formed rule file, so the walk below finds the fields where they must be.
  scoring::RuleSet parsed;
  if (core::Status s = scoring::LoadRuleText(file, parsed); !s.ok()) return s;
  ScaledRuleFile out;
  try {
    YAML::Node root = YAML::Load(file.text);
    if (core::Status s = ScaleTree(file.name, root, speed, out.warnings); !s.ok()) return s;
    CopyEmitter emitter;
    emitter.Emit(root);
    core::Result<std::string> copy = emitter.Text();
    if (!copy.ok()) return core::Status::Error(file.name + ": cannot write the scaled copy: " + copy.status().message());
    out.text = "# Generated by `acmetrace rules --speed " + FormatSpeed(speed) + "` from " + std::string(source_name) +
               ":\n# for, keep_firing_for, range selectors, subqueries, offsets and group intervals divided by " +
               FormatSpeed(speed) + ".\n# Edit the source and generate again. Comments inside the groups are not "
               "copied; the source's\n# leading comment follows.\n" +
               LeadingComments(file.text) + copy.value() + "\n";
  } catch (const std::exception& e) {
    return core::Status::Error(file.name + ": cannot scale the rule file: " + e.what());
  }
  return out;
}

ScaledDuration RecommendedIntervalMs(double speed) {
  core::Result<ScaledDuration> scaled = ScaleDurationMs(kTraceSampleIntervalMs, speed);
  if (!scaled.ok()) return ScaledDuration{kTraceSampleIntervalMs, ""};  // not a speed: as at speed 1
  return scaled.value();
}

std::string PrometheusSnippet(double speed, std::string_view rule_glob) {
  const std::string interval = scoring::FormatDuration(RecommendedIntervalMs(speed).ms);
  return "global:\n"
         "  scrape_interval: " + interval + "       # 15s / " + FormatSpeed(speed) +
         ": every 15 s sample of the trace is scraped\n"
         "  scrape_timeout: " + interval + "\n"
         "  evaluation_interval: " + interval + "\n"
         "rule_files:\n"
         "  - " + std::string(rule_glob) + "\n";
}

}  // namespace acmetrace::rules
