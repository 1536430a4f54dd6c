#include "acmetrace/remote_write/http_transport.h"

#include <time.h>

#include <charconv>

#include "acmetrace/core/clock.h"

namespace acmetrace::remote_write {

int64_t ParseRetryAfterMs(std::string_view value, int64_t now_unix_ms) {
  if (value.empty()) return -1;
  if (value.front() >= '0' && value.front() <= '9') {
    int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc() || end != value.data() + value.size()) return -1;
    return seconds > INT64_MAX / 1000 ? INT64_MAX : seconds * 1000;
  }
  // IMF-fixdate, the form RFC 9110 requires senders to use.
  const std::string text(value.substr(0, 64));
  struct tm tm {};
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return -1;
  const int64_t at_ms = static_cast<int64_t>(::timegm(&tm)) * 1000;
  return at_ms > now_unix_ms ? at_ms - now_unix_ms : 0;
}

core::Result<std::unique_ptr<HttpTransport>> HttpTransport::Create(const std::string& url,
                                                                   scoring::ClientOptions options) {
  core::Result<std::unique_ptr<scoring::PrometheusClient>> client = scoring::PrometheusClient::Create(url, std::move(options));
  if (!client.ok()) return client.status();
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(client).value()));
}

core::Result<HttpAnswer> HttpTransport::Post(const std::string& body) {
  scoring::PrometheusClient::PostBody post;
  post.content = body;
  for (const char* header : kRemoteWriteHeaders) post.headers.emplace_back(header);
  std::string retry_after;
  post.retry_after = &retry_after;
  HttpAnswer answer;
  if (core::Status s = client_->Post("", post, answer.status, answer.body, int64_t{1} << 20); !s.ok()) return s;
  if (!retry_after.empty()) answer.retry_after_ms = ParseRetryAfterMs(retry_after, core::SystemNowMs());
  return answer;
}

}  // namespace acmetrace::remote_write
