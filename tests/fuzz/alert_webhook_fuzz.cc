// libFuzzer target for Alertmanager's webhook body (core::ParseAlertmanagerWebhook), then the line
// acmetrace records for it (core::FormatNotificationLine) read back by `score --notifications`
// (core::ParseNotificationLine). A hostile body is an error of one bounded line; an accepted one is
// recorded as a line that reads back to the same notification.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/alert_notification.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  core::Result<core::AlertNotification> parsed = core::ParseAlertmanagerWebhook(body);
  if (!parsed.ok()) {
    ACMETRACE_FUZZ_CHECK(parsed.status().message().find('\n') == std::string::npos);
    ACMETRACE_FUZZ_CHECK(parsed.status().message().size() < 1024);
    return 0;
  }
  core::AlertNotification n = parsed.value();
  ACMETRACE_FUZZ_CHECK(n.status == "firing" || n.status == "resolved");
  ACMETRACE_FUZZ_CHECK(n.alerts.size() <= core::kMaxNotifiedAlerts);
  n.received_ms = 1'733'350'000'123;
  if (size % 2 == 0) n.trace_ms = 1'688'140'800'000;
  const std::string line = core::FormatNotificationLine(n);
  ACMETRACE_FUZZ_CHECK(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1);
  core::Result<core::AlertNotification> back = core::ParseNotificationLine(line);
  ACMETRACE_FUZZ_CHECK(back.ok());
  const core::AlertNotification& b = back.value();
  ACMETRACE_FUZZ_CHECK(b.receiver == n.receiver && b.status == n.status && b.group_key == n.group_key);
  ACMETRACE_FUZZ_CHECK(b.group_labels == n.group_labels && b.truncated_alerts == n.truncated_alerts);
  ACMETRACE_FUZZ_CHECK(b.trace_ms == n.trace_ms && b.received_ms == n.received_ms);
  ACMETRACE_FUZZ_CHECK(b.alerts.size() == n.alerts.size());
  for (size_t i = 0; i < b.alerts.size(); ++i) {
    ACMETRACE_FUZZ_CHECK(b.alerts[i].labels == n.alerts[i].labels && b.alerts[i].status == n.alerts[i].status);
    ACMETRACE_FUZZ_CHECK(b.alerts[i].starts_at == n.alerts[i].starts_at &&
                         b.alerts[i].fingerprint == n.alerts[i].fingerprint);
  }
  return 0;
}
