// libFuzzer target for `acmetrace rules` (rules::ScaleExpression, rules::ScaleRuleFile): any bytes as a PromQL
// expression (first byte 'e') or as a rule file, at a speed the second byte picks. The scaler may only answer
// with its documented errors (one line, naming the file), nothing may throw, and what it writes is a rule file the
// scoring parser reads back with the same rules.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/rules/rule_scaler.h"
#include "acmetrace/scoring/rule_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  if (size < 2) return 0;
  constexpr double kSpeeds[] = {1, 60, 7, 0.5, 1e6, 0.001, 1e9, 3600};
  const double speed = kSpeeds[data[1] % std::size(kSpeeds)];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (data[0] == 'e') {
    core::Result<rules::ScaledExpression> scaled = rules::ScaleExpression(text, speed);
    if (!scaled.ok()) {
      ACMETRACE_FUZZ_CHECK(scaled.status().message().find('\n') == std::string::npos);
      return 0;
    }
    for (const std::string& w : scaled.value().warnings) ACMETRACE_FUZZ_CHECK(w.find('\n') == std::string::npos);
    // Scaling at speed 1 changes no span: only the way a duration is written (90s -> 1m30s) may differ.
    if (speed == 1) {
      core::Result<rules::ScaledExpression> again = rules::ScaleExpression(scaled.value().expr, 1);
      ACMETRACE_FUZZ_CHECK(again.ok() && again.value().expr == scaled.value().expr);
    }
    return 0;
  }
  core::Result<rules::ScaledRuleFile> scaled = rules::ScaleRuleFile({"fuzz.yml", std::string(text)}, speed, "fuzz.yml");
  if (!scaled.ok()) {
    const std::string& message = scaled.status().message();
    ACMETRACE_FUZZ_CHECK(message.rfind("fuzz.yml", 0) == 0);
    ACMETRACE_FUZZ_CHECK(message.find('\n') == std::string::npos);
    return 0;
  }
  for (const std::string& w : scaled.value().warnings) {
    ACMETRACE_FUZZ_CHECK(w.rfind("fuzz.yml:", 0) == 0 && w.find('\n') == std::string::npos);
  }
  scoring::RuleSet before;
  scoring::RuleSet after;
  ACMETRACE_FUZZ_CHECK(scoring::LoadRuleText({"fuzz.yml", std::string(text)}, before).ok());
  // A span below the scoring parser's 1 s group minimum is valid for Prometheus: read the copy as Prometheus would.
  const core::Status reloaded = scoring::LoadRuleText({"copy.yml", scaled.value().text}, after);
  if (!reloaded.ok()) {
    ACMETRACE_FUZZ_CHECK(reloaded.message().find("interval") != std::string::npos);
    return 0;
  }
  ACMETRACE_FUZZ_CHECK(after.alerts.size() == before.alerts.size() && after.records.size() == before.records.size());
  for (size_t i = 0; i < before.alerts.size(); ++i) {
    ACMETRACE_FUZZ_CHECK(after.alerts[i].name == before.alerts[i].name);
    ACMETRACE_FUZZ_CHECK(after.alerts[i].labels == before.alerts[i].labels);
    // Each duration divided by the speed once (an alias of an anchored one too), as ScaleDurationMs divides it.
    for (const auto field : {&scoring::AlertRule::for_ms, &scoring::AlertRule::keep_firing_for_ms}) {
      if (before.alerts[i].*field == 0) {
        ACMETRACE_FUZZ_CHECK(after.alerts[i].*field == 0);
      } else {
        core::Result<rules::ScaledDuration> d = rules::ScaleDurationMs(before.alerts[i].*field, speed);
        ACMETRACE_FUZZ_CHECK(d.ok() && after.alerts[i].*field == d.value().ms);
      }
    }
    // The copy holds the expression as the scaler wrote it, whatever it takes to write it in YAML.
    core::Result<rules::ScaledExpression> expr = rules::ScaleExpression(before.alerts[i].expr, speed);
    ACMETRACE_FUZZ_CHECK(expr.ok() && after.alerts[i].expr == expr.value().expr);
  }
  for (size_t i = 0; i < before.records.size(); ++i) ACMETRACE_FUZZ_CHECK(after.records[i].name == before.records[i].name);
  return 0;
}
