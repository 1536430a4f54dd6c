// libFuzzer target for Prometheus rule files as score and backfill read them (scoring::LoadRuleText):
// any bytes as an alerting and recording rule file, or (first byte 'd') as a Prometheus duration.
// The parser may only answer with its documented errors: one line, naming the file, of bounded size;
// nothing may throw (yaml-cpp throws on many inputs: every exception must stop at the parse), and what
// loads holds what the scorer relies on.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "acmetrace/scoring/rule_file.h"
#include "fuzz_support.h"

namespace {

void CheckError(const std::string& message, std::string_view origin) {
  ACMETRACE_FUZZ_CHECK(message.rfind(origin, 0) == 0);
  ACMETRACE_FUZZ_CHECK(message.find('\n') == std::string::npos);
  ACMETRACE_FUZZ_CHECK(message.size() < 1024);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == 'd') {
    // A duration: what parses formats back to itself.
    core::Result<int64_t> ms = scoring::ParseDurationMs(text.substr(1));
    if (!ms.ok()) return 0;
    ACMETRACE_FUZZ_CHECK(ms.value() >= 0);
    core::Result<int64_t> again = scoring::ParseDurationMs(scoring::FormatDuration(ms.value()));
    ACMETRACE_FUZZ_CHECK(again.ok() && again.value() == ms.value());
    return 0;
  }
  scoring::RuleSet rules;
  rules.alerts.push_back({});  // what was there before stays, and only it when the file is refused
  const core::Status loaded = scoring::LoadRuleText({"fuzz.yml", std::string(text)}, rules);
  if (!loaded.ok()) {
    CheckError(loaded.message(), "fuzz.yml");
    ACMETRACE_FUZZ_CHECK(rules.alerts.size() == 1 && rules.records.empty());
    return 0;
  }
  std::set<std::string> groups_before;
  for (size_t i = 1; i < rules.alerts.size(); ++i) {
    const scoring::AlertRule& a = rules.alerts[i];
    ACMETRACE_FUZZ_CHECK(!a.name.empty() && !a.expr.empty() && !a.group.empty());
    ACMETRACE_FUZZ_CHECK(a.interval_ms >= scoring::kMinGroupIntervalMs);
    ACMETRACE_FUZZ_CHECK(a.for_ms >= 0 && a.keep_firing_for_ms >= 0);
    ACMETRACE_FUZZ_CHECK(a.line >= 1 && a.file == "fuzz.yml");
    for (const auto& [name, value] : a.labels) ACMETRACE_FUZZ_CHECK(!name.empty());
    // What the run does with each rule: must not crash.
    (void)scoring::KindsOfRule(a, {"gpu_overheat", "xid_error", "util_drop"});
    (void)scoring::RecordingRulesUsed(a, rules);
  }
  for (const scoring::RecordingRule& r : rules.records) ACMETRACE_FUZZ_CHECK(!r.name.empty() && !r.group.empty());
  return 0;
}
