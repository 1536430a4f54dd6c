// The replay's HTTP control endpoint: status as JSON, pause, resume, seek, speed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "acmetrace/core/status.h"
#include "acmetrace/http/http_message.h"
#include "acmetrace/http/http_server.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::producers {

/// Serves, on its own thread:
///   GET  /status                 {"trace_ms":..,"trace_time":..,"speed":..,"paused":..,"records_sent":..,"lag_ms":..}
///   POST /pause, POST /resume
///   POST /seek?t=T               T: unix seconds or ISO 8601 with offset (URL-encode '+' as %2B)
///   POST /speed?value=N|max
/// Errors are {"error":"reason"} with a 4xx: 400 for a bad, missing, repeated or unknown
/// parameter, 404, 405, 409 (seek without a seekable source), and the HTTP server's own limits
/// (414, 431, 503; see http::HttpServerOptions). Thread-safe; the Replayer must outlive it.
class ReplayControlServer {
 public:
  explicit ReplayControlServer(Replayer& replayer);
  ~ReplayControlServer();
  ReplayControlServer(const ReplayControlServer&) = delete;
  ReplayControlServer& operator=(const ReplayControlServer&) = delete;

  /// Listens on "HOST:PORT" or ":PORT" (port 0 picks a free one) and starts serving, with
  /// ControlServerOptions' limits.
  core::Status Start(const std::string& address);
  /// The same with every limit and timeout chosen (tests use short ones).
  core::Status Start(http::HttpServerOptions options);
  /// The bound port, and "http://HOST:PORT/status" to reach it (after Start).
  uint16_t port() const;
  std::string url() const;
  void Stop();

  /// Answers one parsed request (the server's handler; a pure function of the request and the
  /// replayer, for tests and the fuzzer).
  http::HttpResponse Handle(const http::HttpRequest& request);

 private:
  Replayer& replayer_;
  std::unique_ptr<http::HttpServer> server_;
};

/// The control endpoint's server settings for address: one thread, 16 connections, JSON errors,
/// the HTTP server's default timeouts and limits.
http::HttpServerOptions ControlServerOptions(const std::string& address);

/// The status as the endpoint serves it.
std::string ReplayStatusJson(const ReplayStatus& status);

}  // namespace acmetrace::producers
