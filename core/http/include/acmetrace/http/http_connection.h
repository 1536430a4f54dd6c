// The HTTP/1.1 protocol of one connection without a socket: bytes in, responses out. The server
// runs every connection through it, and tests and the fuzzer call it directly.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "acmetrace/http/http_message.h"

namespace acmetrace::http {

/// Limits on what one request may hold; beyond them a request is answered 414, 431 or 413 and the
/// connection closed.
struct HttpLimits {
  size_t max_target_bytes = 8 * 1024;    // the request target (path and query): 414 beyond
  size_t max_header_bytes = 16 * 1024;   // request line and header fields together: 431 beyond
  size_t max_body_bytes = 64 * 1024;     // 413 beyond
  /// Errors the connection itself answers (400, 413, 414, 431, 500) as {"error":"..."} instead
  /// of a line of text, for endpoints whose answers are all JSON.
  bool json_errors = false;
};

/// The bytes of one response: the head (status line and header fields) and the shared body.
struct HttpOutput {
  std::string head;
  std::shared_ptr<const std::string> body;  // null when there is none (HEAD, empty)
  std::string Bytes() const;
};

/// The protocol state of one connection: feed it what the client sent (Receive), take the
/// responses (Next) one at a time, close when closing(). Requests are parsed by Boost.Beast's
/// parser with the limits above; pipelined requests are answered in order; a malformed request is
/// answered with a 4xx and a one-line reason, then the connection closes (the stream cannot be
/// trusted after it). Not thread-safe: one connection, one strand.
class HttpConnection {
 public:
  HttpConnection(const HttpHandler& handler, HttpLimits limits);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// Appends bytes received from the client (ignored once closing()).
  void Receive(std::string_view bytes);
  /// The response to the next whole request received, or nullopt when more bytes are needed (or
  /// the connection is closing). Calls the handler.
  std::optional<HttpOutput> Next();
  /// The last response said "Connection: close": send it, then close.
  bool closing() const { return closing_; }
  /// Bytes of a request not yet complete are held.
  bool mid_request() const;

 private:
  struct Parser;
  HttpOutput Answer(const HttpRequest& request, HttpResponse response, bool keep_alive);
  HttpOutput Refuse(int status, std::string_view reason);

  const HttpHandler& handler_;
  HttpLimits limits_;
  std::unique_ptr<Parser> parser_;
  std::string buffer_;  // received, not yet consumed by the parser
  size_t request_bytes_ = 0;                        // of the request being parsed, consumed so far
  size_t request_line_bytes_ = std::string::npos;  // its request line, once seen whole
  bool closing_ = false;
};

/// The whole conversation at once: feeds input to an HttpConnection and returns every response's
/// bytes, in order, until the input is used up or the connection closes.
std::string ServeHttpBytes(std::string_view input, const HttpHandler& handler, const HttpLimits& limits = {});

/// The bytes of response followed by "Connection: close" (for answers outside a request, such as
/// the 503 of a full server).
HttpOutput ClosingOutput(const HttpResponse& response);

/// One-line error body: "reason\n", or {"error":"reason"}\n with json.
HttpResponse ErrorResponse(int status, std::string_view reason, bool json = false);

}  // namespace acmetrace::http
