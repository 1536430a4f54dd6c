// What paged: Alertmanager's notifications (recorded by `run`/`export --notifications FILE`) scored
// against the incidents, per receiver, with the protocol of the rules (matcher.h): a notification
// notifies an incident when one of its firing alerts, at the trace time the alert was first
// notified, detects it (Detects). `acmetrace score --notifications FILE`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "acmetrace/core/alert_notification.h"
#include "acmetrace/core/status.h"
#include "acmetrace/scoring/incidents.h"
#include "acmetrace/scoring/matcher.h"

namespace acmetrace::scoring {

/// Reads a --notifications file (JSON lines of core::FormatNotificationLine; blank lines skipped),
/// in file order. A bad line is an error "FILE:LINE: field: reason"; an empty file is a file of no
/// notification.
core::Result<std::vector<core::AlertNotification>> LoadNotifications(const std::string& path);

/// One incident as a receiver was told of it. Value type.
struct IncidentNotice {
  size_t incident = 0;          // index into the report's incidents
  int64_t notifications = 0;    // firing notifications carrying an alert that detects it
  std::optional<int64_t> ttn_ms;  // first such notification's trace time - start
};

/// A firing notification none of whose firing alerts detects an incident. Value type.
struct UnmatchedPage {
  int64_t trace_ms = 0;
  std::string receiver;
  std::set<std::string> alertnames;
  core::AlertLabelSet group_labels;
};

/// What one receiver (or every receiver together) was told. Value type.
struct ReceiverScore {
  std::string receiver;
  int64_t firing = 0;    // firing notifications ("pages")
  int64_t resolved = 0;  // resolved notifications
  int64_t unmatched = 0; // firing notifications that notified no incident
  std::vector<IncidentNotice> incidents;  // every incident of the window, in its order
  std::map<std::string, KindCount> by_kind;  // caught = notified
  std::optional<double> recall;              // notified / incidents
  std::optional<double> ttn_median_s;
  std::optional<double> ttn_worst_s;
  std::optional<double> notifications_per_incident;  // mean over the notified incidents
  int64_t max_notifications_per_incident = 0;
  std::vector<UnmatchedPage> unmatched_pages;
  int64_t notified() const;
};

/// Everything `score --notifications` shows. Value type.
struct NotificationReport {
  std::string file;
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  MatchWindow window;
  std::vector<Incident> incidents;       // those starting in [from, to]
  std::vector<ReceiverScore> receivers;  // by name
  ReceiverScore total;                   // every receiver together ("any receiver")
  int64_t without_trace_time = 0;        // notifications received before the replay's first record: skipped
  int64_t outside_window = 0;            // notifications whose trace time is outside [from, to]: skipped
  int64_t truncated_alerts = 0;          // alerts Alertmanager left out of the bodies (max_alerts)
};

/// Scores the notifications against the incidents starting in [from_ms, to_ms]. An alert (its
/// fingerprint and startsAt) is matched once, at the trace time of the first notification that
/// carried it firing, with Detects and the kinds of its alertname (kinds_by_alertname; an alertname
/// not in it speaks for every kind unless the alert has a `kind` label); every firing notification
/// carrying it counts for the incidents it detects (repeats and regroupings included), and one
/// carrying only alerts that detect nothing is an unmatched page.
NotificationReport ScoreNotifications(const std::vector<core::AlertNotification>& notifications,
                                      const std::vector<Incident>& incidents,
                                      const std::map<std::string, std::set<std::string>>& kinds_by_alertname,
                                      int64_t from_ms, int64_t to_ms, const MatchWindow& window);

/// The table: one row per receiver and one for any receiver, then the unmatched pages (at most 20).
std::string FormatNotificationTable(const NotificationReport& report);

/// The JSON object {"file", "window", "receivers": [...], "total", ...} (`score --json` puts it under
/// "notifications").
std::string FormatNotificationJson(const NotificationReport& report);

/// object_json (a JSON object, as FormatJson writes it) with key: value_json added last, dumped again
/// with the same indentation; "{}" gives an object of that member alone.
std::string AddJsonMember(const std::string& object_json, const std::string& key, const std::string& value_json);

}  // namespace acmetrace::scoring
