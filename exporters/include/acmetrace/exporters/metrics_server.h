// The HTTP side: /metrics (everything, or ?target=NODE for one node's persona series) and
// /targets (HTTP service discovery), on prometheus-cpp's Exposer, with optional basic auth.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "acmetrace/core/status.h"
#include "acmetrace/exporters/exporter.h"

namespace acmetrace::exporters {

struct ServerOptions {
  std::string listen = "127.0.0.1:9400";  // port 0 picks a free one
  std::string basic_auth_user;           // empty = no authentication
  std::string basic_auth_password;
  int threads = 4;
  /// Scrapes of everything within this many ms of a rendering share it (and its gzip), so
  /// concurrent scrapers cost one rendering; 0 = render each scrape.
  int64_t render_cache_ms = 1000;
};

/// Serves an Exporter over HTTP: GET /metrics (gzip if asked), /metrics?target=NODE, /targets.
/// prometheus-cpp's Exposer hosts the server (civetweb); the requests are answered in its
/// begin_request hook, because a Collectable cannot see the query string (?target=) and the
/// Exposer's TextSerializer takes ~100 ms for the 31,000 series of Seren's persona. Start and Stop from one thread; serving runs on the Exposer's
/// worker threads. Thread-safe for its users once started.
class MetricsServer {
 public:
  MetricsServer(Exporter& exporter, ServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Binds and starts serving; an error names the address (in use, not an address, ...).
  core::Status Start();
  void Stop();
  /// The bound port (after Start), and "http://HOST:PORT/metrics".
  int port() const { return port_; }
  std::string url() const;

  Exporter& exporter() { return exporter_; }
  /// The body of /metrics (target empty) or /metrics?target=, gzipped if asked; renderings of
  /// everything are shared within render_cache_ms. Thread-safe.
  std::shared_ptr<const std::string> Render(const std::string& target, bool gzip);

 private:
  struct Impl;
  Exporter& exporter_;
  ServerOptions options_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

/// "Basic base64(user:password)" as a client sends it (tests and the auth check share it).
std::string BasicAuthHeader(const std::string& user, const std::string& password);

}  // namespace acmetrace::exporters
