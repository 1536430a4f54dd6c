// Alertmanager's webhook body as acmetrace checks it, and the line it records for each notification.
#include "acmetrace/core/alert_notification.h"

#include <gtest/gtest.h>

#include <string>

namespace acmetrace::core {
namespace {

// A body as Alertmanager 0.25 posts it (annotations, URLs and common labels are not kept).
constexpr char kBody[] = R"({"receiver":"seren-oncall","status":"firing","alerts":[
  {"status":"firing","labels":{"alertname":"DcgmGpuTemperatureCritical","cluster":"seren","Hostname":"node-7","gpu":"3","severity":"critical"},
   "annotations":{"summary":"GPU 3 at 93 C"},"startsAt":"2026-12-04T21:40:00.123Z","endsAt":"0001-01-01T00:00:00Z",
   "generatorURL":"http://127.0.0.1:9090/graph","fingerprint":"5f0d4c1b2a3e4f56"},
  {"status":"resolved","labels":{"alertname":"DcgmGpuTemperatureCritical","cluster":"seren","Hostname":"node-2","gpu":"0"},
   "startsAt":"2026-12-04T21:30:00Z","endsAt":"2026-12-04T21:39:00Z","fingerprint":"0a"}],
 "groupLabels":{"alertname":"DcgmGpuTemperatureCritical","cluster":"seren"},"commonLabels":{},"commonAnnotations":{},
 "externalURL":"http://127.0.0.1:9093","version":"4",
 "groupKey":"{}/{severity=\"critical\"}/{cluster=\"seren\"}:{alertname=\"DcgmGpuTemperatureCritical\", cluster=\"seren\"}",
 "truncatedAlerts":2})";

TEST(AlertNotificationTest, KeepsWhatScoringNeedsOfAlertmanagersBody) {
  Result<AlertNotification> n = ParseAlertmanagerWebhook(kBody);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n.value().receiver, "seren-oncall");
  EXPECT_EQ(n.value().status, "firing");
  EXPECT_EQ(n.value().truncated_alerts, 2);
  EXPECT_EQ(n.value().group_labels.at("cluster"), "seren");
  EXPECT_NE(n.value().group_key.find("severity=\"critical\""), std::string::npos);
  ASSERT_EQ(n.value().alerts.size(), 2u);
  const NotifiedAlert& a = n.value().alerts[0];
  EXPECT_EQ(a.status, "firing");
  EXPECT_EQ(a.labels.at("Hostname"), "node-7");
  EXPECT_EQ(a.labels.at("gpu"), "3");
  EXPECT_EQ(a.starts_at, "2026-12-04T21:40:00.123Z");
  EXPECT_EQ(a.fingerprint, "5f0d4c1b2a3e4f56");
  EXPECT_EQ(n.value().alerts[1].status, "resolved");
}

TEST(AlertNotificationTest, RefusesABodyThatIsNotAlertmanagersWithOneLineNamingTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"receiver\":", "not JSON"},
      {"[1,2]", "expected a JSON object"},
      {R"({"receiver":"r","status":"firing","alerts":[],"version":"3"})", "version: expected \"4\""},
      {R"({"status":"firing","alerts":[],"version":"4"})", "receiver: missing"},
      {R"({"receiver":"r","status":"paging","alerts":[],"version":"4"})", "status: expected firing or resolved, got 'paging'"},
      {R"({"receiver":"r","status":"firing","alerts":{},"version":"4"})", "alerts: expected an array"},
      {R"({"receiver":"r","status":"firing","alerts":[{"status":"firing","labels":{"gpu":3}}],"version":"4"})",
       "alerts[0].labels: expected an object of strings"},
      {R"({"receiver":"r","status":"firing","alerts":[{"status":"firing"}],"version":"4"})", "alerts[0].labels: missing"},
      {R"({"receiver":"r","status":"firing","alerts":[7],"version":"4"})", "alerts[0]: expected an object"},
      {R"({"receiver":"r","status":"firing","alerts":[],"truncatedAlerts":-1,"version":"4"})",
       "truncatedAlerts: expected a count"},
  };
  for (const auto& [body, expected] : cases) {
    Result<AlertNotification> n = ParseAlertmanagerWebhook(body);
    ASSERT_FALSE(n.ok()) << body;
    EXPECT_NE(n.status().message().find(expected), std::string::npos) << n.status().message();
    EXPECT_EQ(n.status().message().find('\n'), std::string::npos);
  }
  std::string many = R"({"receiver":"r","status":"firing","version":"4","alerts":[)";
  for (size_t i = 0; i <= kMaxNotifiedAlerts; ++i) many += std::string(i ? "," : "") + R"({"status":"firing","labels":{}})";
  many += "]}";
  Result<AlertNotification> n = ParseAlertmanagerWebhook(many);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), "alerts: more than 1000 alerts");
}

TEST(AlertNotificationTest, TheRecordedLineReadsBackToTheSameNotification) {
  Result<AlertNotification> n = ParseAlertmanagerWebhook(kBody);
  ASSERT_TRUE(n.ok());
  n.value().received_ms = 1'733'348'400'500;
  n.value().trace_ms = 1'688'142'600'000;  // 2023-06-30T16:30:00Z
  const std::string line = FormatNotificationLine(n.value());
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_NE(line.find("\"trace_ms\":1688142600000,\"trace_time\":\"2023-06-30 16:30:00+00:00\""), std::string::npos)
      << line;
  Result<AlertNotification> back = ParseNotificationLine(line);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().trace_ms, n.value().trace_ms);
  EXPECT_EQ(back.value().received_ms, n.value().received_ms);
  EXPECT_EQ(back.value().receiver, "seren-oncall");
  EXPECT_EQ(back.value().group_key, n.value().group_key);
  ASSERT_EQ(back.value().alerts.size(), 2u);
  EXPECT_EQ(back.value().alerts[0].labels, n.value().alerts[0].labels);
  EXPECT_EQ(back.value().alerts[1].ends_at, "2026-12-04T21:39:00Z");

  // Before the first record there is no trace time: null, read back as none.
  n.value().trace_ms.reset();
  Result<AlertNotification> early = ParseNotificationLine(FormatNotificationLine(n.value()));
  ASSERT_TRUE(early.ok()) << early.status().message();
  EXPECT_FALSE(early.value().trace_ms.has_value());
  Result<AlertNotification> bad = ParseNotificationLine(R"({"received_ms":1,"trace_ms":"x","receiver":"r"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("trace_ms:"), std::string::npos);
}

}  // namespace
}  // namespace acmetrace::core
