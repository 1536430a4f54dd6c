// The remote write transport over HTTP(S): libcurl through scoring's PrometheusClient (the one
// HTTP client of the project), with the remote write headers and the user's credentials.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "acmetrace/remote_write/write_queue.h"
#include "acmetrace/scoring/range_query.h"

namespace acmetrace::remote_write {

/// A Retry-After value as a wait in ms from now_unix_ms: delay-seconds ("120") or an HTTP-date
/// ("Wed, 21 Oct 2015 07:28:00 GMT"; a past date is 0); -1 when it is neither.
int64_t ParseRetryAfterMs(std::string_view value, int64_t now_unix_ms);

/// POSTs to a remote write URL (http://host:port/api/v1/write). One per shard: not thread-safe.
class HttpTransport : public WriteTransport {
 public:
  /// Checks the URL and credentials (the errors of PrometheusClient::Create).
  static core::Result<std::unique_ptr<HttpTransport>> Create(const std::string& url, scoring::ClientOptions options);
  core::Result<HttpAnswer> Post(const std::string& body) override;

 private:
  explicit HttpTransport(std::unique_ptr<scoring::PrometheusClient> client) : client_(std::move(client)) {}
  std::unique_ptr<scoring::PrometheusClient> client_;
};

}  // namespace acmetrace::remote_write
