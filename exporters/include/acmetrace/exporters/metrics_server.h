// The HTTP side: /metrics (everything, or ?target=NODE for one node's persona series), /targets
// (HTTP service discovery), /, /-/healthy and /-/ready, on the shared HTTP server (acmetrace::http),
// with optional basic auth.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "acmetrace/core/status.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/exporters/notification_log.h"
#include "acmetrace/http/http_message.h"

namespace acmetrace::exporters {

struct ServerOptions {
  std::string listen = "127.0.0.1:9400";  // HOST:PORT or :PORT (every interface); port 0 picks a free one
  std::string basic_auth_user;           // empty = no authentication
  std::string basic_auth_password;
  int threads = 4;  // requests answered at once (a rendering runs on one of them)
  /// Scrapes of everything within this many ms of a rendering share it (and its gzip), so
  /// concurrent scrapers cost one rendering; 0 = render each scrape.
  int64_t render_cache_ms = 1000;
  /// Connections open at once; one more is answered 503 and closed.
  int max_connections = 64;
  /// A client has this long to send a whole request; a stalled one is closed, others are served.
  int64_t request_timeout_ms = 10'000;
  /// Where POST /alertmanager/webhook records Alertmanager's notifications (--notifications); null:
  /// the route answers 404 saying so. It must outlive the server.
  NotificationLog* notifications = nullptr;
};

/// Serves an Exporter over HTTP: GET /metrics (gzip if asked), /metrics?target=NODE, /targets,
/// / (a page of links), /-/healthy, /-/ready (503 until a record is applied), and POST
/// /alertmanager/webhook (with ServerOptions::notifications). Basic auth, when set, guards /metrics,
/// /targets and the webhook. Start and Stop from one thread; requests are answered on the
/// server's threads. Thread-safe for its users once started.
class MetricsServer {
 public:
  MetricsServer(Exporter& exporter, ServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Where POST /alertmanager/webhook records (ServerOptions::notifications); call before Start.
  void SetNotificationLog(NotificationLog* notifications) { options_.notifications = notifications; }
  /// Binds and starts serving; an error is one line naming the address ("cannot listen on
  /// 127.0.0.1:9400: address already in use").
  core::Status Start();
  void Stop();
  /// The bound port (after Start), and "http://HOST:PORT/metrics".
  int port() const { return port_; }
  std::string url() const;

  Exporter& exporter() { return exporter_; }
  /// The body of /metrics (target empty) or /metrics?target=, gzipped if asked; renderings of
  /// everything are shared within render_cache_ms. Thread-safe.
  std::shared_ptr<const std::string> Render(const std::string& target, bool gzip);
  /// Answers one parsed request (the server's handler; for tests and the fuzzer). Thread-safe.
  http::HttpResponse Handle(const http::HttpRequest& request);

 private:
  struct Impl;
  bool Authorized(const http::HttpRequest& request) const;
  http::HttpResponse HandleWebhook(const http::HttpRequest& request);
  Exporter& exporter_;
  ServerOptions options_;
  std::string expected_auth_;  // "Basic ..." or empty
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

/// "Basic base64(user:password)" as a client sends it (tests and the auth check share it).
std::string BasicAuthHeader(const std::string& user, const std::string& password);

/// Whether an Accept-Encoding value accepts gzip (listed, or "*", without q=0).
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace acmetrace::exporters
