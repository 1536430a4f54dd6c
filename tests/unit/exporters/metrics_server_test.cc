// MetricsServer over real HTTP on 127.0.0.1 (a free port): /metrics, ?target=, /targets, basic auth.
#include "acmetrace/exporters/metrics_server.h"

#include "acmetrace/core/config.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/processors/process_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <vector>
#include <zlib.h>

#include "acmetrace/http/http_connection.h"
#include "../http_get.h"

namespace acmetrace::exporters {
namespace {

using test::HttpResponse;

// GET with an Authorization header when one is given (the server's basic auth).
HttpResponse Get(int port, const std::string& path, const std::string& authorization = "",
                 const std::string& extra_headers = "") {
  return test::HttpGet(port, path,
                       (authorization.empty() ? "" : "Authorization: " + authorization + "\r\n") + extra_headers);
}

core::UtilSample Util(const std::string& node) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = node;
  s.ts_ms = 1000;
  s.gpu.push_back(core::GpuMetric{core::InternName("GPU_UTIL"), {99}});
  return s;
}

TEST(MetricsServerTest, ServesEverythingOrOneTargetOnAFreePort) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  exporter.Apply(Util("10.0.0.2"));
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 2});
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");

  const HttpResponse all = Get(server.port(), "/metrics");
  EXPECT_EQ(all.status, 200);
  EXPECT_NE(all.body.find("Hostname=\"10.0.0.1\""), std::string::npos);
  EXPECT_NE(all.body.find("Hostname=\"10.0.0.2\""), std::string::npos);
  EXPECT_NE(all.body.find("acmetrace_records_total"), std::string::npos);

  const HttpResponse one = Get(server.port(), "/metrics?target=10.0.0.2");
  EXPECT_EQ(one.status, 200);
  EXPECT_NE(one.body.find("Hostname=\"10.0.0.2\""), std::string::npos);
  EXPECT_EQ(one.body.find("10.0.0.1"), std::string::npos);
  EXPECT_EQ(one.body.find("acmetrace_records_total"), std::string::npos);

  // The target of one request does not leak into the next on the same worker thread.
  EXPECT_NE(Get(server.port(), "/metrics").body.find("10.0.0.1"), std::string::npos);

  const HttpResponse targets = Get(server.port(), "/targets");
  EXPECT_EQ(targets.status, 200);
  EXPECT_EQ(targets.body, "[{\"targets\":[\"10.0.0.1\",\"10.0.0.2\"],\"labels\":{\"cluster\":\"seren\"}}]\n");
  server.Stop();
}

TEST(MetricsServerTest, BasicAuthGuardsMetricsAndTargets) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "prom", "s3cret", 2});
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Get(server.port(), "/metrics").status, 401);
  EXPECT_EQ(Get(server.port(), "/metrics", BasicAuthHeader("prom", "wrong")).status, 401);
  EXPECT_EQ(Get(server.port(), "/metrics?target=10.0.0.1").status, 401);
  EXPECT_EQ(Get(server.port(), "/targets").status, 401);
  const HttpResponse ok = Get(server.port(), "/metrics", BasicAuthHeader("prom", "s3cret"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  EXPECT_EQ(Get(server.port(), "/targets", BasicAuthHeader("prom", "s3cret")).status, 200);
}

std::string Gunzip(const std::string& in) {
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  std::string out(in.size() * 20 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_FINISH);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

TEST(MetricsServerTest, GzipWhenAskedWithTheSameText) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  // One rendering shared by both requests (the process_* series are read per rendering).
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 2, /*render_cache_ms=*/600'000});
  ASSERT_TRUE(server.Start().ok());
  const HttpResponse plain = Get(server.port(), "/metrics");
  const HttpResponse zipped = Get(server.port(), "/metrics", "", "Accept-Encoding: gzip\r\n");
  ASSERT_EQ(zipped.status, 200);
  EXPECT_NE(plain.body, zipped.body);
  EXPECT_EQ(Gunzip(zipped.body), plain.body);
}

TEST(MetricsServerTest, ARenderingIsSharedWithinTheCacheTimeAndRenderedAgainAfter) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  MetricsServer cached(exporter, ServerOptions{"127.0.0.1:0", "", "", 1, /*render_cache_ms=*/600'000});
  ASSERT_TRUE(cached.Start().ok());
  const auto first = cached.Render("", false);
  exporter.Apply(Util("10.0.0.2"));
  EXPECT_EQ(cached.Render("", false), first);  // within the cache time: the same bytes
  // render_cache_ms 0: every scrape renders (the process_* series and closed anomaly flags move
  // with wall time even when no record comes).
  MetricsServer uncached(exporter, ServerOptions{"127.0.0.1:0", "", "", 1, /*render_cache_ms=*/0});
  ASSERT_TRUE(uncached.Start().ok());
  const auto second = uncached.Render("", false);
  EXPECT_NE(uncached.Render("", false), second);
  EXPECT_NE(second->find("10.0.0.2"), std::string::npos);
  EXPECT_NE(second->find("\nprocess_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(second->find("\nacmetrace_build_info{version=\""), std::string::npos);
}

TEST(MetricsServerTest, UnknownPathsAre404) {
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 1});
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Get(server.port(), "/nothing").status, 404);
}

TEST(MetricsServerTest, BasicAuthHeaderIsBase64OfUserColonPassword) {
  EXPECT_EQ(BasicAuthHeader("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(BasicAuthHeader("a", "b"), "Basic YTpi");
}

TEST(MetricsServerTest, AnAddressInUseIsAnErrorNotACrash) {
  Exporter exporter(ExportOptions{});
  MetricsServer first(exporter, ServerOptions{"127.0.0.1:0", "", "", 1});
  ASSERT_TRUE(first.Start().ok());
  MetricsServer second(exporter, ServerOptions{"127.0.0.1:" + std::to_string(first.port()), "", "", 1});
  const core::Status s = second.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot listen on 127.0.0.1:" + std::to_string(first.port()) + ": address already in use");
}

TEST(MetricsServerTest, StalledClientsDoNotStopScrapes) {
  // The reproduction: 4 clients without their final blank line held civetweb's 4 threads.
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 4});
  ASSERT_TRUE(server.Start().ok());
  std::vector<int> stalled;
  for (int i = 0; i < 8; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string partial = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    ASSERT_EQ(::write(fd, partial.data(), partial.size()), static_cast<ssize_t>(partial.size()));
    stalled.push_back(fd);
  }
  const HttpResponse scrape = Get(server.port(), "/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_NE(scrape.body.find("Hostname=\"10.0.0.1\""), std::string::npos);
  for (int fd : stalled) ::close(fd);
}

TEST(MetricsServerTest, ListensOnEveryInterfaceWithPortAlone) {
  // dcgm-exporter's --listen form.
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  MetricsServer server(exporter, ServerOptions{":0", "", "", 1});
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  EXPECT_EQ(Get(server.port(), "/metrics").status, 200);
}

TEST(MetricsServerTest, ExportListenIsCheckedWhenTheConfigIsRead) {
  // A malformed address is a usage error before anything starts; dcgm-exporter's :PORT is accepted.
  core::Config config;
  DeclareExportConfig(config);
  processors::DeclareProcessConfig(config);  // the export options read process.units too
  ASSERT_TRUE(config.Set("export.listen", ":9400").ok());
  EXPECT_EQ(ExportOptionsFromConfig(config).listen, ":9400");
  for (const char* bad : {"9400", ":94x0", "host.example:80", ":70000"}) {
    ASSERT_TRUE(config.Set("export.listen", bad).ok());
    EXPECT_THROW(ExportOptionsFromConfig(config), std::invalid_argument) << bad;
  }
}

TEST(MetricsServerTest, ABadListenAddressIsOneLine) {
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{"example.org:9400", "", "", 1});
  const core::Status s = server.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("cannot listen on example.org:9400: not an IP address: 'example.org'"), 0u)
      << s.message();
}

// One request through the server's request handling (parser, routes, auth), without a socket.
struct Exchange {
  int status = 0;
  std::string head;
  std::string body;
};

Exchange Serve(MetricsServer& server, const std::string& request) {
  const http::HttpHandler handler = [&server](const http::HttpRequest& r) { return server.Handle(r); };
  const std::string raw = http::ServeHttpBytes(request, handler);
  Exchange e;
  const size_t end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || end == std::string::npos) return e;
  e.status = std::stoi(raw.substr(9, 3));
  e.head = raw.substr(0, end + 4);
  e.body = raw.substr(end + 4);
  return e;
}

TEST(MetricsServerTest, TheIndexPageLinksMetrics) {
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "prom", "s3cret", 1});
  const Exchange e = Serve(server, "GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(e.status, 200);  // no credentials needed for the page of links
  EXPECT_NE(e.head.find("Content-Type: text/html; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(e.body.find("<a href=\"/metrics\">"), std::string::npos) << e.body;
}

TEST(MetricsServerTest, HealthyAlwaysReadyOnceARecordIsApplied) {
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 1});
  EXPECT_EQ(Serve(server, "GET /-/healthy HTTP/1.0\r\n\r\n").status, 200);
  const Exchange before = Serve(server, "GET /-/ready HTTP/1.0\r\n\r\n");
  EXPECT_EQ(before.status, 503);
  EXPECT_EQ(before.body, "acmetrace exporter is not ready: no record applied yet.\n");
  exporter.Apply(Util("10.0.0.1"));
  EXPECT_EQ(Serve(server, "GET /-/ready HTTP/1.0\r\n\r\n").status, 200);
  EXPECT_EQ(Serve(server, "HEAD /-/ready HTTP/1.0\r\n\r\n").body, "");
}

TEST(MetricsServerTest, OtherMethodsAre405AndUnknownPaths404) {
  Exporter exporter(ExportOptions{});
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 1});
  for (const char* method : {"POST", "DELETE", "BREW"}) {
    const Exchange e = Serve(server, std::string(method) + " /metrics HTTP/1.0\r\n\r\n");
    EXPECT_EQ(e.status, 405) << method;
    EXPECT_NE(e.head.find("Allow: GET, HEAD\r\n"), std::string::npos);
  }
  EXPECT_EQ(Serve(server, "GET /metricsx HTTP/1.0\r\n\r\n").status, 404);
}

TEST(MetricsServerTest, TargetTwiceOrBadlyEncodedIs400) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.0.0.1"));
  MetricsServer server(exporter, ServerOptions{"127.0.0.1:0", "", "", 1});
  const Exchange twice = Serve(server, "GET /metrics?target=10.0.0.1&target=10.0.0.2 HTTP/1.0\r\n\r\n");
  EXPECT_EQ(twice.status, 400);
  EXPECT_EQ(twice.body, "target: given more than once\n");
  EXPECT_EQ(Serve(server, "GET /metrics?target=%zz HTTP/1.0\r\n\r\n").status, 400);
  // A percent-encoded target is decoded; unknown parameters (Prometheus' params:) are ignored.
  const Exchange encoded = Serve(server, "GET /metrics?target=10.0.0%2E1&module=x HTTP/1.0\r\n\r\n");
  EXPECT_EQ(encoded.status, 200);
  EXPECT_NE(encoded.body.find("Hostname=\"10.0.0.1\""), std::string::npos);
}

TEST(MetricsServerTest, AcceptEncodingIsParsed) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("x-gzip2"));
}

}  // namespace
}  // namespace acmetrace::exporters
