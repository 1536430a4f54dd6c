// The HTTP side: /metrics (everything, or ?target=NODE for one node's persona series) and
// /targets (HTTP service discovery), on prometheus-cpp's Exposer, with optional basic auth.
#pragma once

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
};

/// Serves an Exporter over HTTP. Start and Stop from one thread; serving runs on the Exposer's
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
