// MetricsServer: prometheus-cpp's Exposer plus civetweb's begin_request hook, which sees the query
// string (?target=) before the Exposer's handler runs on the same worker thread, and answers
// /targets itself.
#include "acmetrace/exporters/metrics_server.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <cstring>
#include <map>
#include <mutex>

namespace acmetrace::exporters {
namespace {

// The ?target= of the request being served on this worker thread (civetweb serves a request,
// begin_request hook and handler, on one thread).
thread_local std::string current_target;

// Servers by listening port, for the begin_request hook (a C callback without a context of ours).
std::mutex servers_mutex;
std::map<int, std::pair<Exporter*, std::string>> server_state;  // port -> exporter, expected auth header

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

int BeginRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  current_target.clear();
  if (info->query_string != nullptr) {
    char value[512];
    const int n = mg_get_var(info->query_string, std::strlen(info->query_string), "target", value, sizeof value);
    if (n > 0) current_target.assign(value, static_cast<size_t>(n));
  }
  if (info->local_uri == nullptr || std::strcmp(info->local_uri, "/targets") != 0) return 0;  // the Exposer's
  Exporter* exporter = nullptr;
  std::string expected_auth;
  {
    std::lock_guard<std::mutex> lock(servers_mutex);
    auto it = server_state.find(info->server_port);
    if (it == server_state.end()) return 0;
    exporter = it->second.first;
    expected_auth = it->second.second;
  }
  if (!expected_auth.empty()) {
    const char* auth = mg_get_header(conn, "Authorization");
    if (auth == nullptr || !SameSecret(auth, expected_auth)) {
      mg_printf(conn,
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"acmetrace\"\r\nContent-Length: "
                "0\r\nConnection: close\r\n\r\n");
      return 401;
    }
  }
  const std::string body = exporter->TargetsJson();
  mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

class ExporterCollectable : public prometheus::Collectable {
 public:
  explicit ExporterCollectable(Exporter& exporter) : exporter_(exporter) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return exporter_.Collect(current_target); }

 private:
  Exporter& exporter_;
};

}  // namespace

std::string BasicAuthHeader(const std::string& user, const std::string& password) {
  return "Basic " + Base64(user + ":" + password);
}

struct MetricsServer::Impl {
  CivetCallbacks callbacks{};
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<ExporterCollectable> collectable;
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
  impl_->collectable = std::make_shared<ExporterCollectable>(exporter_);
  impl_->exposer->RegisterCollectable(impl_->collectable);
  std::string expected_auth;
  if (!options_.basic_auth_user.empty()) {
    const std::string user = options_.basic_auth_user;
    const std::string password = options_.basic_auth_password;
    impl_->exposer->RegisterAuth(
        [user, password](const std::string& u, const std::string& p) {
          return SameSecret(u, user) && SameSecret(p, password);
        },
        "acmetrace");
    expected_auth = BasicAuthHeader(user, password);
  }
  std::lock_guard<std::mutex> lock(servers_mutex);
  server_state[port_] = {&exporter_, expected_auth};
  return core::Status::Ok();
}

void MetricsServer::Stop() {
  if (!impl_->exposer) return;
  impl_->exposer.reset();  // joins the worker threads
  std::lock_guard<std::mutex> lock(servers_mutex);
  server_state.erase(port_);
}

std::string MetricsServer::url() const {
  const size_t colon = options_.listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : options_.listen.substr(0, colon);
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  return "http://" + host + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace acmetrace::exporters
