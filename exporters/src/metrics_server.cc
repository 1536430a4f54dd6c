// MetricsServer: prometheus-cpp's Exposer hosts civetweb; its begin_request hook answers /metrics
// (with ?target= and gzip, from a shared rendering) and /targets, with basic auth.
#include "acmetrace/exporters/metrics_server.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/exposer.h>

#include <zlib.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

namespace acmetrace::exporters {
namespace {

// What the begin_request hook needs of each server, by listening port (a C callback gets no
// context of ours).
struct ServedState {
  MetricsServer* server = nullptr;
  std::string expected_auth;  // "Basic ..." or empty
};
std::mutex servers_mutex;
std::map<int, ServedState> servers;

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

bool AcceptsGzip(mg_connection* conn) {
  const char* enc = mg_get_header(conn, "Accept-Encoding");
  return enc != nullptr && std::strstr(enc, "gzip") != nullptr;
}

void Send(mg_connection* conn, int status, const char* status_text, const char* content_type, const std::string& body,
          bool gzip) {
  mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n", status, status_text,
            content_type, body.size(), gzip ? "Content-Encoding: gzip\r\n" : "");
  mg_write(conn, body.data(), body.size());
}

int BeginRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info->local_uri == nullptr) return 0;
  const bool metrics = std::strcmp(info->local_uri, "/metrics") == 0;
  const bool targets = std::strcmp(info->local_uri, "/targets") == 0;
  if (!metrics && !targets) return 0;  // civetweb answers 404
  ServedState state;
  {
    std::lock_guard<std::mutex> lock(servers_mutex);
    auto it = servers.find(info->server_port);
    if (it == servers.end()) return 0;
    state = it->second;
  }
  if (!state.expected_auth.empty()) {
    const char* auth = mg_get_header(conn, "Authorization");
    if (auth == nullptr || !SameSecret(auth, state.expected_auth)) {
      mg_printf(conn,
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"acmetrace\"\r\nContent-Length: "
                "0\r\n\r\n");
      return 401;
    }
  }
  if (targets) {
    Send(conn, 200, "OK", "application/json", state.server->exporter().TargetsJson(), false);
    return 200;
  }
  std::string target;
  if (info->query_string != nullptr) {
    char value[512];
    const int n = mg_get_var(info->query_string, std::strlen(info->query_string), "target", value, sizeof value);
    if (n > 0) target.assign(value, static_cast<size_t>(n));
  }
  const bool gzip = AcceptsGzip(conn);
  const std::shared_ptr<const std::string> body = state.server->Render(target, gzip);
  Send(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", *body, gzip);
  return 200;
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

}  // namespace

std::string BasicAuthHeader(const std::string& user, const std::string& password) {
  return "Basic " + Base64(user + ":" + password);
}

struct MetricsServer::Impl {
  CivetCallbacks callbacks{};
  std::unique_ptr<prometheus::Exposer> exposer;
  // The last rendering of everything; one rendering at a time (concurrent scrapers wait and share).
  std::mutex render_mutex;
  int64_t rendered_at_ms = 0;
  std::shared_ptr<const std::string> text;
  std::shared_ptr<const std::string> gzip;
};

MetricsServer::MetricsServer(Exporter& exporter, ServerOptions options)
    : exporter_(exporter), options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

MetricsServer::~MetricsServer() { Stop(); }

core::Status MetricsServer::Start() {
  impl_->callbacks.begin_request = &BeginRequest;
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", options_.listen, "num_threads", std::to_string(options_.threads)},
        &impl_->callbacks);
  } catch (const std::exception& e) {
    return core::Status::Error("cannot listen on " + options_.listen + ": " + e.what());
  }
  const std::vector<int> ports = impl_->exposer->GetListeningPorts();
  if (ports.empty()) return core::Status::Error("cannot listen on " + options_.listen + ": no port bound");
  port_ = ports.front();
  ServedState state;
  state.server = this;
  if (!options_.basic_auth_user.empty()) {
    state.expected_auth = BasicAuthHeader(options_.basic_auth_user, options_.basic_auth_password);
  }
  std::lock_guard<std::mutex> lock(servers_mutex);
  servers[port_] = state;
  return core::Status::Ok();
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
  if (!impl_->exposer) return;
  {
    std::lock_guard<std::mutex> lock(servers_mutex);
    servers.erase(port_);
  }
  impl_->exposer.reset();  // joins the worker threads
  std::lock_guard<std::mutex> lock(servers_mutex);
  servers.erase(port_);
}

std::string MetricsServer::url() const {
  const size_t colon = options_.listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : options_.listen.substr(0, colon);
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  return "http://" + host + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace acmetrace::exporters
