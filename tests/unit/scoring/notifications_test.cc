// What paged, against hand-computed expectations: per receiver, incidents notified, time to notify in
// trace time, notifications per incident (repeats and grouping), and pages that matched nothing.
#include "acmetrace/scoring/notifications.h"

#include <gtest/gtest.h>

#include "test_files.h"

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kMin = 60'000;

const std::vector<Incident> kIncidents = {
    {"seren", "gpu_overheat", "n1-3", kT0 + 10 * kMin, kT0 + 20 * kMin},
    {"seren", "gpu_overheat", "n2-0", kT0 + 12 * kMin, kT0 + 18 * kMin},
    {"kalos", "telemetry_gap", "k9", kT0 + 40 * kMin, kT0 + 45 * kMin},
};

core::NotifiedAlert Alert(const std::string& host, const std::string& gpu, const std::string& starts_at,
                          const std::string& status = "firing") {
  core::NotifiedAlert a;
  a.status = status;
  a.labels = {{"alertname", "DcgmGpuTemperatureHigh"}, {"cluster", "seren"}, {"Hostname", host}, {"gpu", gpu}};
  a.starts_at = starts_at;
  a.fingerprint = host + gpu;
  return a;
}

core::AlertNotification Notification(const std::string& receiver, int64_t trace_min,
                                     std::vector<core::NotifiedAlert> alerts, const std::string& status = "firing") {
  core::AlertNotification n;
  n.receiver = receiver;
  n.status = status;
  n.received_ms = 1'733'348'400'000 + trace_min * 1000;  // speed 60: a trace minute is a wall second
  n.trace_ms = kT0 + trace_min * kMin;
  n.alerts = std::move(alerts);
  n.group_labels = {{"alertname", n.alerts.empty() ? "" : n.alerts[0].labels.at("alertname")}};
  return n;
}

const std::map<std::string, std::set<std::string>> kKinds = {{"DcgmGpuTemperatureHigh", {"gpu_overheat"}}};

TEST(NotificationScoreTest, CountsIncidentsNotifiedTimeToNotifyAndNotificationsPerIncidentPerReceiver) {
  const std::vector<core::AlertNotification> notes = {
      // One grouped notification for both overheating GPUs, 1 and 3 trace minutes after their starts.
      Notification("tickets", 13, {Alert("n1", "3", "a"), Alert("n2", "0", "b")}),
      // group_interval later: the same two alerts again (a repeat counts for both incidents).
      Notification("tickets", 18, {Alert("n1", "3", "a"), Alert("n2", "0", "b")}),
      // Resolved: not a page.
      Notification("tickets", 25, {Alert("n1", "3", "a", "resolved")}, "resolved"),
      // Another receiver notified of the first only, late.
      Notification("gpu-oncall", 19, {Alert("n1", "3", "a")}),
  };
  const NotificationReport r = ScoreNotifications(notes, kIncidents, kKinds, kT0, kT0 + 60 * kMin, MatchWindow{});
  ASSERT_EQ(r.receivers.size(), 2u);
  const ReceiverScore& oncall = r.receivers[0];
  const ReceiverScore& tickets = r.receivers[1];
  EXPECT_EQ(oncall.receiver, "gpu-oncall");
  EXPECT_EQ(tickets.receiver, "tickets");
  EXPECT_EQ(tickets.firing, 2);
  EXPECT_EQ(tickets.resolved, 1);
  EXPECT_EQ(tickets.notified(), 2);
  EXPECT_DOUBLE_EQ(*tickets.recall, 2.0 / 3.0);
  EXPECT_EQ(tickets.incidents[0].notifications, 2);
  EXPECT_EQ(*tickets.incidents[0].ttn_ms, 3 * kMin);
  EXPECT_EQ(*tickets.incidents[1].ttn_ms, 1 * kMin);
  EXPECT_DOUBLE_EQ(*tickets.ttn_median_s, 120.0);
  EXPECT_DOUBLE_EQ(*tickets.ttn_worst_s, 180.0);
  EXPECT_DOUBLE_EQ(*tickets.notifications_per_incident, 2.0);
  EXPECT_EQ(tickets.max_notifications_per_incident, 2);
  EXPECT_EQ(tickets.unmatched, 0);
  EXPECT_EQ(tickets.by_kind.at("gpu_overheat").caught, 2);
  EXPECT_EQ(tickets.by_kind.at("telemetry_gap").caught, 0);
  EXPECT_EQ(oncall.notified(), 1);
  EXPECT_EQ(*oncall.incidents[0].ttn_ms, 9 * kMin);
  // Any receiver: the earliest notification of each incident, every page counted.
  EXPECT_EQ(r.total.firing, 3);
  EXPECT_EQ(r.total.incidents[0].notifications, 3);
  EXPECT_EQ(*r.total.incidents[0].ttn_ms, 3 * kMin);
}

TEST(NotificationScoreTest, AnAlertIsMatchedAtItsFirstNotificationSoLateRepeatsAreNotFalsePages) {
  // Notified at minute 13; still firing and repeated at minute 100, far past the incident's end + 10 min.
  const std::vector<core::AlertNotification> notes = {
      Notification("tickets", 13, {Alert("n1", "3", "a")}),
      Notification("tickets", 100, {Alert("n1", "3", "a")}),
      // A new firing of the same GPU (another startsAt) at minute 100 is a new alert: it matches nothing.
      Notification("tickets", 101, {Alert("n1", "3", "later")}),
      // A GPU with no incident, and an alert of a kind the incident is not.
      Notification("tickets", 14, {Alert("n7", "1", "c")}),
  };
  const NotificationReport r = ScoreNotifications(notes, kIncidents, kKinds, kT0, kT0 + 200 * kMin, MatchWindow{});
  ASSERT_EQ(r.receivers.size(), 1u);
  const ReceiverScore& s = r.receivers[0];
  EXPECT_EQ(s.incidents[0].notifications, 2);
  EXPECT_EQ(s.unmatched, 2);
  ASSERT_EQ(s.unmatched_pages.size(), 2u);
  EXPECT_EQ(s.unmatched_pages[0].trace_ms, kT0 + 14 * kMin);  // in the order received
  EXPECT_EQ(s.unmatched_pages[1].trace_ms, kT0 + 101 * kMin);
  EXPECT_EQ(s.unmatched_pages[0].alertnames, std::set<std::string>{"DcgmGpuTemperatureHigh"});

  // The rule's kinds: a temperature alert does not notify a telemetry gap of its node.
  const std::vector<Incident> gap = {{"seren", "telemetry_gap", "n1", kT0 + 10 * kMin, kT0 + 20 * kMin}};
  const NotificationReport kinds = ScoreNotifications({notes[0]}, gap, kKinds, kT0, kT0 + 60 * kMin, MatchWindow{});
  EXPECT_EQ(kinds.total.notified(), 0);
  const NotificationReport any = ScoreNotifications({notes[0]}, gap, {}, kT0, kT0 + 60 * kMin, MatchWindow{});
  EXPECT_EQ(any.total.notified(), 1);
}

TEST(NotificationScoreTest, SkipsNotificationsWithoutTraceTimeAndOutsideTheWindow) {
  std::vector<core::AlertNotification> notes = {Notification("tickets", 13, {Alert("n1", "3", "a")}),
                                                Notification("tickets", 13, {Alert("n2", "0", "b")}),
                                                Notification("tickets", 500, {Alert("n2", "0", "b")})};
  notes[1].trace_ms.reset();
  notes[0].truncated_alerts = 4;
  const NotificationReport r = ScoreNotifications(notes, kIncidents, kKinds, kT0, kT0 + 60 * kMin, MatchWindow{});
  EXPECT_EQ(r.without_trace_time, 1);
  EXPECT_EQ(r.outside_window, 1);
  EXPECT_EQ(r.truncated_alerts, 4);
  EXPECT_EQ(r.total.firing, 1);
  const std::string table = FormatNotificationTable(r);
  EXPECT_NE(table.find("1 received before the replay's first record, 1 outside the window"), std::string::npos)
      << table;
  EXPECT_NE(table.find("4 alerts left out of the bodies"), std::string::npos);
  EXPECT_NE(table.find("any receiver"), std::string::npos);
  const std::string json = FormatNotificationJson(r);
  EXPECT_NE(json.find("\"without_trace_time\": 1"), std::string::npos) << json;
  EXPECT_NE(AddJsonMember("{\"rules\": []}", "notifications", json).find("\"notifications\": {"), std::string::npos);
}

TEST(NotificationScoreTest, LoadsTheRecordedLinesAndNamesTheBadLine) {
  const std::string dir = TestDir();
  core::AlertNotification n = Notification("tickets", 13, {Alert("n1", "3", "a")});
  const std::string good = core::FormatNotificationLine(n);
  const std::string path = WriteFile(dir, "n.jsonl", good + "\n" + good);
  auto loaded = LoadNotifications(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded.value().size(), 2u);
  EXPECT_EQ(loaded.value()[1].trace_ms, n.trace_ms);
  const std::string bad = WriteFile(dir, "bad.jsonl", good + "{\"received_ms\":1,\"trace_ms\":null,\"receiver\":7}\n");
  auto refused = LoadNotifications(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), bad + ":2: receiver: expected a string");
  EXPECT_FALSE(LoadNotifications(dir).ok());
}

}  // namespace
}  // namespace acmetrace::scoring
