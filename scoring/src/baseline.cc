// The previous scorecard of --baseline: only what the comparison shows is read.
#include "acmetrace/scoring/baseline.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <simdjson.h>

#include "acmetrace/core/input_errors.h"

namespace acmetrace::scoring {

namespace {

namespace od = simdjson::ondemand;

// One entry of "rules" (or "total"); why it is not one otherwise.
// A rule's counts and ratios, by their keys in `score --json`.
constexpr std::pair<std::string_view, int64_t BaselineRule::*> kCounts[] = {
    {"onsets", &BaselineRule::onsets}, {"false_alerts", &BaselineRule::false_alerts},
    {"caught", &BaselineRule::caught}, {"total_incidents", &BaselineRule::total_incidents}};
constexpr std::pair<std::string_view, std::optional<double> BaselineRule::*> kRatios[] = {
    {"precision", &BaselineRule::precision}, {"recall", &BaselineRule::recall}};

std::optional<std::string> ReadRule(od::object object, BaselineRule& out) {
  bool has_rule = false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return "malformed key in a rule";
    od::value value;
    if (field.value().get(value) != simdjson::SUCCESS) return "malformed JSON in a rule";
    auto count = [&](int64_t& into) -> std::optional<std::string> {
      if (value.get_int64().get(into) != simdjson::SUCCESS || into < 0) {
        return "\"" + std::string(key) + "\" of a rule is not a count";
      }
      return std::nullopt;
    };
    auto ratio = [&](std::optional<double>& into) -> std::optional<std::string> {
      bool is_null = false;
      if (value.is_null().get(is_null) == simdjson::SUCCESS && is_null) return std::nullopt;
      double v = 0;
      if (value.get_double().get(v) != simdjson::SUCCESS || !(v >= 0.0 && v <= 1.0)) {
        return "\"" + std::string(key) + "\" of a rule is not a ratio in 0-1 or null";
      }
      into = v;
      return std::nullopt;
    };
    std::optional<std::string> why;
    if (key == "rule" || key == "source") {
      std::string_view text;
      if (value.get_string().get(text) != simdjson::SUCCESS) return "\"" + std::string(key) + "\" is not a string";
      (key == "rule" ? out.rule : out.source) = std::string(text);
      has_rule = has_rule || key == "rule";
    } else {
      for (const auto& [name, member] : kCounts) {
        if (key == name) why = count(out.*member);
      }
      for (const auto& [name, member] : kRatios) {
        if (key == name) why = ratio(out.*member);
      }
    }
    if (why) return why;
  }
  if (!has_rule) return "a rule without \"rule\"";
  return std::nullopt;
}

}  // namespace

core::Result<Baseline> ParseBaseline(std::string_view json, const std::string& file) {
  auto bad = [&](const std::string& why) {
    return core::Status::Error("--baseline: " + file + ": not a score --json document: " + why);
  };
  const simdjson::padded_string padded(json);
  od::parser parser;
  od::document doc;
  od::object root;
  if (const simdjson::error_code e = parser.iterate(padded).get(doc); e != simdjson::SUCCESS) {
    return bad(std::string("not JSON (") + simdjson::error_message(e) + ")");
  }
  if (const simdjson::error_code e = doc.get_object().get(root); e != simdjson::SUCCESS) {
    return bad(std::string("not a JSON object (") + simdjson::error_message(e) + ")");
  }
  Baseline out;
  out.file = file;
  bool has_rules = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return bad("malformed key");
    if (key == "rules") {
      od::array rules;
      if (field.value().get_array().get(rules) != simdjson::SUCCESS) return bad("\"rules\" is not an array");
      has_rules = true;
      for (auto item : rules) {
        od::object object;
        if (item.get_object().get(object) != simdjson::SUCCESS) return bad("an entry of \"rules\" is not an object");
        BaselineRule rule;
        if (std::optional<std::string> why = ReadRule(object, rule)) return bad(*why);
        out.rules.push_back(std::move(rule));
      }
    } else if (key == "total") {
      od::object object;
      if (field.value().get_object().get(object) != simdjson::SUCCESS) return bad("\"total\" is not an object");
      BaselineRule total;
      if (std::optional<std::string> why = ReadRule(object, total)) return bad(*why);
      out.total = std::move(total);
    }
  }
  if (!has_rules) return bad("no \"rules\" array");
  return out;
}

core::Result<Baseline> LoadBaseline(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return core::Status::Error("--baseline: " + path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};
  struct stat st {};
  if (::fstat(::fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) {
    return core::Status::Error("--baseline: " + path + ": not a regular file");
  }
  if (st.st_size > kMaxBaselineBytes) {
    return core::Status::Error("--baseline: " + path + ": larger than " + std::to_string(kMaxBaselineBytes) + " bytes");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const size_t n = std::fread(text.data(), 1, text.size(), file);
  if (std::ferror(file)) return core::Status::Error("--baseline: " + path + ": cannot read: " + std::strerror(errno));
  text.resize(n);
  return ParseBaseline(text, path);
}

}  // namespace acmetrace::scoring
