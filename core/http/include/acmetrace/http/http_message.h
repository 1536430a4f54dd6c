// What a handler of the HTTP server sees and returns: a parsed request, a response, and the query
// helpers that turn a bad or repeated parameter into a 400 instead of an exception.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::http {

/// One request, parsed and with its query decoded. Value type; thread-compatible.
struct HttpRequest {
  std::string method;  // as sent ("GET", "POST", or any token: handlers answer 405)
  std::string target;  // as sent: path and query
  std::string path;    // the target before '?', not decoded
  std::vector<std::pair<std::string, std::string>> query;    // decoded, in the order sent
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case, in the order sent
  std::string body;
  int version = 11;  // 10 for HTTP/1.0

  /// The first header of that (lower-case) name, "" if absent.
  std::string_view Header(std::string_view lower_name) const;
  /// GET or HEAD (HEAD is answered as GET without the body).
  bool IsRead() const { return method == "GET" || method == "HEAD"; }
};

/// One response. The body is shared so that a cached rendering is sent without a copy. Value type.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::shared_ptr<const std::string> body;                   // null = empty
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones: Allow, WWW-Authenticate, ...

  /// status with body (a copy is taken).
  static HttpResponse Text(int status, std::string body, std::string content_type = "text/plain; charset=utf-8");
};

/// Answers one request; runs on the server's threads, so it must be thread-safe. An exception is
/// caught and answered 500, but handlers report errors as responses.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

/// Decodes %XX escapes and '+' (a space, as HTML forms send it). Fails on '%' not followed by two
/// hex digits, naming the offending text.
core::Result<std::string> PercentDecode(std::string_view text);

/// Splits "a=1&b=%20x" into decoded pairs; a pair without '=' has an empty value. Fails on bad
/// percent-encoding.
core::Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view query);

/// The value of a parameter given at most once: nullopt when absent, an error when repeated.
core::Result<std::optional<std::string>> QueryValue(const HttpRequest& request, std::string_view name);

/// The first query parameter whose name is not in allowed, or nullptr.
const std::string* UnknownParameter(const HttpRequest& request, const std::vector<std::string_view>& allowed);

/// text in single quotes for a one-line message: control bytes as '?', cut after 64 bytes ("...").
std::string QuoteForMessage(std::string_view text);

}  // namespace acmetrace::http
