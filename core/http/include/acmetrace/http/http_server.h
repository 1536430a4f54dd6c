// HttpServer: the one HTTP/1.1 server of acmetrace (the replay control endpoint and /metrics), on
// Boost.Asio; each connection runs through an HttpConnection, with a bounded pool and timeouts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "acmetrace/core/status.h"
#include "acmetrace/http/http_connection.h"
#include "acmetrace/http/http_message.h"

namespace acmetrace::http {

/// Where an HttpServer listens and what it bounds. Value type.
struct HttpServerOptions {
  /// HOST:PORT, [IPV6]:PORT, or :PORT for every interface (dcgm-exporter's form); port 0 picks one.
  std::string listen = "127.0.0.1:0";
  int threads = 1;  // handlers running at once
  /// Connections open at once; one more is answered 503 and closed.
  int max_connections = 64;
  /// A client has this long to send a whole request (header and body), counted from its connection
  /// or from the previous response; an idle keep-alive connection is closed after it too.
  int64_t request_timeout_ms = 10'000;
  /// A client has this long to take a response (a 5 MB /metrics over a slow link included).
  int64_t response_timeout_ms = 60'000;
  HttpLimits limits;
};

/// A listening address, as parsed from HttpServerOptions::listen.
struct ListenAddress {
  std::string host;  // the IP literal to bind ("0.0.0.0" for ":PORT")
  uint16_t port = 0;
};

/// Parses HOST:PORT, [IPV6]:PORT or :PORT; "localhost" is 127.0.0.1. Errors say what is wrong.
core::Result<ListenAddress> ParseListenAddress(std::string_view text);

/// Serves handler over HTTP on its own threads. Start and Stop from one thread; the handler runs on
/// the server's threads (a connection's requests one after another, options.threads at once).
class HttpServer {
 public:
  HttpServer(HttpHandler handler, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds and starts serving. An error is one line: "cannot listen on ADDR: address already in use".
  core::Status Start();
  /// Stops accepting, closes every connection and joins the threads.
  void Stop();
  /// The bound port (after Start).
  uint16_t port() const { return port_; }
  /// "http://HOST:PORT" to reach it (127.0.0.1 when bound to every interface).
  std::string base_url() const;

 private:
  struct Impl;
  HttpServerOptions options_;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::string url_host_;
};

}  // namespace acmetrace::http
