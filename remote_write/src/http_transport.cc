#include "acmetrace/remote_write/http_transport.h"

namespace acmetrace::remote_write {

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
  HttpAnswer answer;
  if (core::Status s = client_->Post("", post, answer.status, answer.body, int64_t{1} << 20); !s.ok()) return s;
  return answer;
}

}  // namespace acmetrace::remote_write
