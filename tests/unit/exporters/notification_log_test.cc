// Alertmanager's webhook on the exporter's routes (MetricsServer::Handle, no socket): what is recorded
// in --notifications FILE, and what is refused.
#include "acmetrace/exporters/notification_log.h"

#include <gtest/gtest.h>

#include <string>

#include "acmetrace/exporters/metrics_server.h"
#include "test_files.h"

namespace acmetrace::exporters {
namespace {

constexpr char kBody[] =
    R"({"receiver":"kalos-oncall","status":"firing","version":"4","groupKey":"g","truncatedAlerts":0,)"
    R"("groupLabels":{"alertname":"AcmetraceXidError","cluster":"kalos"},)"
    R"("alerts":[{"status":"firing","labels":{"alertname":"AcmetraceXidError","cluster":"kalos","subject":"n1-4"},)"
    R"("startsAt":"2026-12-04T21:40:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"ff"}]})";

http::HttpRequest Post(const std::string& body, const std::string& path = kAlertmanagerWebhookPath) {
  http::HttpRequest r;
  r.method = "POST";
  r.target = path;
  r.path = path;
  r.headers.emplace_back("content-type", "application/json");
  r.body = body;
  return r;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(NotificationLogTest, RecordsEachNotificationWithItsWallAndTraceTimeOnALineOfItsOwn) {
  const std::string path = TestDir() + "/notifications.jsonl";
  int64_t trace_ms = 1'688'140'800'000;
  auto log = NotificationLog::Open(path, [&] { return std::optional<int64_t>(trace_ms); },
                                   [] { return int64_t{1'733'348'400'000}; });
  ASSERT_TRUE(log.ok()) << log.status().message();
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{});
  server.SetNotificationLog(log.value().get());

  http::HttpResponse r = server.Handle(Post(kBody));
  EXPECT_EQ(r.status, 200);
  trace_ms += 900'000;
  EXPECT_EQ(server.Handle(Post(kBody)).status, 200);
  EXPECT_EQ(log.value()->recorded(), 2);
  // Each line is complete on disk as soon as it is answered (flushed per line).
  const std::string text = ReadAll(path);
  const size_t first_end = text.find('\n');
  ASSERT_NE(first_end, std::string::npos);
  auto first = core::ParseNotificationLine(std::string_view(text).substr(0, first_end));
  auto second = core::ParseNotificationLine(std::string_view(text).substr(first_end + 1, text.size() - first_end - 2));
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(first.value().received_ms, 1'733'348'400'000);
  EXPECT_EQ(first.value().trace_ms, 1'688'140'800'000);
  EXPECT_EQ(second.value().trace_ms, 1'688'141'700'000);
  EXPECT_EQ(first.value().receiver, "kalos-oncall");
  ASSERT_EQ(first.value().alerts.size(), 1u);
  EXPECT_EQ(first.value().alerts[0].labels.at("subject"), "n1-4");
}

TEST(NotificationLogTest, AppendsToAnExistingFileInsteadOfTruncatingIt) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "notifications.jsonl", "an earlier run's line\n");
  auto log = NotificationLog::Open(path, [] { return std::optional<int64_t>(); }, [] { return int64_t{5}; });
  ASSERT_TRUE(log.ok());
  http::HttpRequest request = Post(kBody);
  EXPECT_EQ(log.value()->Receive(request).status, 200);
  const std::string text = ReadAll(path);
  EXPECT_EQ(text.rfind("an earlier run's line\n{\"received_ms\":5,", 0), 0u) << text;
  EXPECT_NE(text.find("\"trace_ms\":null"), std::string::npos);
}

TEST(NotificationLogTest, RefusesHostileBodiesWithAOneLine400AndRecordsNothing) {
  const std::string path = TestDir() + "/notifications.jsonl";
  auto log = NotificationLog::Open(path, [] { return std::optional<int64_t>(1'688'140'800'000); });
  ASSERT_TRUE(log.ok());
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{});
  server.SetNotificationLog(log.value().get());
  for (const std::string& body : {std::string("{\"receiver\":"), std::string("null"), std::string(""),
                                 std::string(R"({"receiver":"r","status":"firing","version":"4","alerts":[{"status":"firing","labels":{"a":[]}}]})")}) {
    http::HttpResponse r = server.Handle(Post(body));
    EXPECT_EQ(r.status, 400) << body;
    ASSERT_TRUE(r.body);
    EXPECT_EQ(r.body->rfind("webhook body: ", 0), 0u) << *r.body;
    EXPECT_EQ(r.body->find('\n'), r.body->size() - 1) << *r.body;
  }
  EXPECT_EQ(log.value()->refused(), 4);
  EXPECT_EQ(log.value()->recorded(), 0);
  EXPECT_EQ(ReadAll(path), "");
}

// What `export --notifications` stamps a notification with: the newest trace time of any cluster.
TEST(NotificationLogTest, ExportsTraceTimeIsTheNewestOfAnyCluster) {
  Exporter exporter(ExportOptions{});
  EXPECT_FALSE(exporter.NewestTraceTimeMs().has_value());
  exporter.NoteTraceTime("seren", 1'688'140'800'000);
  exporter.NoteTraceTime("kalos", 1'688'140'860'000);
  exporter.NoteTraceTime("seren", 1'688'140'830'000);
  EXPECT_EQ(exporter.NewestTraceTimeMs(), 1'688'140'860'000);
}

TEST(NotificationLogTest, TheRouteWantsPostItsLogAndTheServersCredentials) {
  Exporter exporter(ExportOptions{});
  MetricsServer without(exporter, ServerOptions{});
  http::HttpResponse none = without.Handle(Post(kBody));
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body->find("--notifications FILE"), std::string::npos);

  const std::string path = TestDir() + "/notifications.jsonl";
  auto log = NotificationLog::Open(path, [] { return std::optional<int64_t>(); });
  ASSERT_TRUE(log.ok());
  ServerOptions options;
  options.basic_auth_user = "am";
  options.basic_auth_password = "secret";
  MetricsServer server(exporter, options);
  server.SetNotificationLog(log.value().get());
  http::HttpRequest get = Post(kBody);
  get.method = "GET";
  http::HttpResponse r = server.Handle(get);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers.at(0).second, "POST");
  EXPECT_EQ(server.Handle(Post(kBody)).status, 401);
  http::HttpRequest authorized = Post(kBody);
  authorized.headers.emplace_back("authorization", BasicAuthHeader("am", "secret"));
  EXPECT_EQ(server.Handle(authorized).status, 200);
  EXPECT_EQ(log.value()->recorded(), 1);

  auto unwritable = NotificationLog::Open(TestDir() + "/no/such/dir/n.jsonl", nullptr);
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.status().message().find("--notifications: "), std::string::npos);
  EXPECT_NE(unwritable.status().message().find("cannot open: No such file or directory"), std::string::npos);
}

}  // namespace
}  // namespace acmetrace::exporters
