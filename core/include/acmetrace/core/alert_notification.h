// Alertmanager's webhook notifications: the body Alertmanager posts (version 4), checked field by
// field, and the JSON line acmetrace records for each one (`--notifications FILE`), which
// `acmetrace score --notifications` reads back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// What one notification may hold: Alertmanager's max_alerts keeps real ones far below; more is a
/// forged body, refused before anything is kept.
inline constexpr size_t kMaxNotifiedAlerts = 1'000;
/// Labels per alert (and group labels per notification): Prometheus alerts carry a dozen.
inline constexpr size_t kMaxNotificationLabels = 128;
/// The longest recorded line read back (a notification body is at most 64 KiB; its line is shorter,
/// annotations and URLs are not kept).
inline constexpr size_t kMaxNotificationLineBytes = 1 << 20;

/// Label names to values, sorted. Value type.
using AlertLabelSet = std::map<std::string, std::string>;

/// One alert of a notification. Value type.
struct NotifiedAlert {
  std::string status;       // "firing" or "resolved"
  AlertLabelSet labels;
  std::string starts_at;    // as Alertmanager sent it (RFC 3339, wall time of Prometheus)
  std::string ends_at;
  std::string fingerprint;  // Alertmanager's hash of the labels ("" if it sent none)
};

/// One notification: the webhook body's fields acmetrace keeps, and when it arrived. Value type.
struct AlertNotification {
  int64_t received_ms = 0;          // wall time it was received (unix ms)
  std::optional<int64_t> trace_ms;  // trace time of the replay then; none before the first record
  std::string receiver;
  std::string status;               // "firing" or "resolved"
  std::string group_key;
  AlertLabelSet group_labels;
  int64_t truncated_alerts = 0;
  std::vector<NotifiedAlert> alerts;
};

/// Parses an Alertmanager webhook body (`"version":"4"`): receiver, status, groupKey, groupLabels,
/// truncatedAlerts and each alert's status, labels, startsAt, endsAt and fingerprint (other fields,
/// annotations and URLs, are skipped). The error is one line naming the field ("alerts[2].labels:
/// expected an object of strings"); nothing is thrown. received_ms and trace_ms are left for the caller.
Result<AlertNotification> ParseAlertmanagerWebhook(std::string_view body);

/// The notification as one JSON line (with its '\n'): received_ms, received (UTC), trace_ms and
/// trace_time (null before the first record), receiver, status, group_key, group_labels,
/// truncated_alerts, alerts [{status, labels, starts_at, ends_at, fingerprint}].
std::string FormatNotificationLine(const AlertNotification& notification);

/// Reads back a line of FormatNotificationLine; the error names the field.
Result<AlertNotification> ParseNotificationLine(std::string_view line);

}  // namespace acmetrace::core
