// MetricsServer: the routes of the exporter over the shared HTTP server: /metrics (with ?target=
// and gzip, from a shared rendering), /targets, /, /-/healthy and /-/ready, with basic auth.
#include "acmetrace/exporters/metrics_server.h"

#include <zlib.h>

#include <cctype>
#include <chrono>
#include <mutex>

#include "acmetrace/http/http_server.h"

namespace acmetrace::exporters {
namespace {

constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

// The landing page a Prometheus user expects at /: where the metrics are.
constexpr char kIndexPage[] =
    "<!DOCTYPE html>\n<html><head><title>acmetrace exporter</title></head><body>\n"
    "<h1>acmetrace exporter</h1>\n"
    "<p><a href=\"/metrics\">Metrics</a></p>\n"
    "<p><a href=\"/targets\">Targets</a> (HTTP service discovery), "
    "<a href=\"/-/healthy\">/-/healthy</a>, <a href=\"/-/ready\">/-/ready</a></p>\n"
    "</body></html>\n";

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

http::HttpResponse Text(int status, std::string body) { return http::HttpResponse::Text(status, std::move(body)); }

std::string Base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// Constant-time comparison: the check should not leak how much of a guess was right.
bool SameSecret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Gzip(const std::string& in) {
  z_stream z{};
  // Level 1: ~5x smaller for this text at a fraction of the default level's time.
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(in.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

http::HttpResponse Unauthorized() {
  http::HttpResponse r = Text(401, "unauthorized: this endpoint needs basic auth\n");
  r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"acmetrace\"");
  return r;
}

}  // namespace

std::string BasicAuthHeader(const std::string& user, const std::string& password) {
  return "Basic " + Base64(user + ":" + password);
}

bool AcceptsGzip(std::string_view accept_encoding) {
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    const std::string_view item = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view{} : accept_encoding.substr(comma + 1);
    const size_t semicolon = item.find(';');
    const std::string coding = Lower(Trim(item.substr(0, semicolon)));
    if (coding != "gzip" && coding != "*") continue;
    if (semicolon == std::string_view::npos) return true;
    // "gzip;q=0" (or 0.0, 0.000) refuses it.
    const std::string params = Lower(item.substr(semicolon + 1));
    const size_t q = params.find("q=");
    if (q == std::string::npos) return true;
    std::string_view value = Trim(std::string_view(params).substr(q + 2));
    value = value.substr(0, value.find_first_of(" ;"));
    return value.empty() || value.find_first_not_of("0.") != std::string_view::npos;
  }
  return false;
}

struct MetricsServer::Impl {
  std::unique_ptr<http::HttpServer> server;
  // The last rendering of everything; one rendering at a time (concurrent scrapers wait and share).
  std::mutex render_mutex;
  int64_t rendered_at_ms = 0;
  std::shared_ptr<const std::string> text;
  std::shared_ptr<const std::string> gzip;
};

MetricsServer::MetricsServer(Exporter& exporter, ServerOptions options)
    : exporter_(exporter), options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  if (!options_.basic_auth_user.empty()) {
    expected_auth_ = BasicAuthHeader(options_.basic_auth_user, options_.basic_auth_password);
  }
}

MetricsServer::~MetricsServer() { Stop(); }

core::Status MetricsServer::Start() {
  Stop();
  http::HttpServerOptions options;
  options.listen = options_.listen;
  options.threads = options_.threads;
  options.max_connections = options_.max_connections;
  options.request_timeout_ms = options_.request_timeout_ms;
  impl_->server = std::make_unique<http::HttpServer>([this](const http::HttpRequest& r) { return Handle(r); },
                                                     std::move(options));
  if (core::Status s = impl_->server->Start(); !s.ok()) {
    impl_->server.reset();
    return s;
  }
  port_ = impl_->server->port();
  return core::Status::Ok();
}

http::HttpResponse MetricsServer::Handle(const http::HttpRequest& request) {
  const std::string& path = request.path;
  const bool known = path == "/" || path == "/metrics" || path == "/targets" || path == "/-/healthy" ||
                     path == "/-/ready";
  if (path == kAlertmanagerWebhookPath) return HandleWebhook(request);
  if (!known) return Text(404, "unknown path; try /metrics, /targets, /-/healthy or /-/ready\n");
  if (!request.IsRead()) {
    http::HttpResponse r = Text(405, "use GET\n");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  if (path == "/") return http::HttpResponse::Text(200, kIndexPage, "text/html; charset=utf-8");
  if (path == "/-/healthy") return Text(200, "acmetrace exporter is healthy.\n");
  if (path == "/-/ready") {
    if (!exporter_.ready()) return Text(503, "acmetrace exporter is not ready: no record applied yet.\n");
    return Text(200, "acmetrace exporter is ready.\n");
  }
  if (!Authorized(request)) return Unauthorized();
  if (path == "/targets") return http::HttpResponse::Text(200, exporter_.TargetsJson(), "application/json");
  core::Result<std::optional<std::string>> target = http::QueryValue(request, "target");
  if (!target.ok()) return http::ErrorResponse(400, target.status().message());
  const bool gzip = AcceptsGzip(request.Header("accept-encoding"));
  http::HttpResponse r;
  r.content_type = kExpositionType;
  r.body = Render(target.value().value_or(""), gzip);
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  r.headers.emplace_back("Vary", "Accept-Encoding");
  return r;
}

bool MetricsServer::Authorized(const http::HttpRequest& request) const {
  return expected_auth_.empty() || SameSecret(std::string(request.Header("authorization")), expected_auth_);
}

http::HttpResponse MetricsServer::HandleWebhook(const http::HttpRequest& request) {
  if (options_.notifications == nullptr) {
    return Text(404, "this exporter records no Alertmanager notifications: start it with --notifications FILE\n");
  }
  if (request.method != "POST") {
    http::HttpResponse r = Text(405, "use POST (Alertmanager's webhook_configs)\n");
    r.headers.emplace_back("Allow", "POST");
    return r;
  }
  if (!Authorized(request)) return Unauthorized();
  return options_.notifications->Receive(request);
}

std::shared_ptr<const std::string> MetricsServer::Render(const std::string& target, bool gzip) {
  if (!target.empty()) {
    // One node's series: small, rendered each time.
    std::string text = exporter_.ScrapeExposition(target);
    return std::make_shared<const std::string>(gzip ? Gzip(text) : std::move(text));
  }
  std::lock_guard<std::mutex> lock(impl_->render_mutex);
  const int64_t now = SteadyMs();
  // Rendered again once render_cache_ms passed even if no record came: closed anomaly flags move on
  // by wall time, and the process_* series are read per scrape.
  const bool fresh = impl_->text && now - impl_->rendered_at_ms < options_.render_cache_ms;
  if (!fresh) {
    impl_->text = std::make_shared<const std::string>(exporter_.ScrapeExposition());
    impl_->gzip.reset();
    impl_->rendered_at_ms = now;
  }
  if (!gzip) return impl_->text;
  if (!impl_->gzip) impl_->gzip = std::make_shared<const std::string>(Gzip(*impl_->text));
  return impl_->gzip;
}

void MetricsServer::Stop() {
  if (impl_->server) impl_->server->Stop();
}

std::string MetricsServer::url() const { return impl_->server ? impl_->server->base_url() + "/metrics" : ""; }

}  // namespace acmetrace::exporters
