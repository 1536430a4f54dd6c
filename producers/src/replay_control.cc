// ReplayControlServer: Boost.Beast over one io_context thread; one request per connection, which
// is all a control endpoint needs.
#include "acmetrace/producers/replay_control.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <functional>
#include <thread>

#include "acmetrace/core/record_json.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

// The value of name in a query string, "" if absent.
std::string QueryParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name && eq != std::string_view::npos) return UrlDecode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

std::string Message(std::string_view key, std::string_view text) {
  std::string out = "{\"";
  out += key;
  out += "\":";
  core::AppendJsonString(out, text);
  out += "}";
  return out;
}

}  // namespace

std::string ReplayStatusJson(const ReplayStatus& s) {
  std::string out = "{\"trace_ms\":" + std::to_string(s.trace_ms) + ",\"trace_time\":";
  core::AppendJsonString(out, s.records > 0 ? core::FormatIsoTime(s.trace_ms, 0) : "");
  out += ",\"clock_trace_ms\":" + std::to_string(s.clock_trace_ms);
  out += ",\"speed\":";
  if (s.speed > 0) {
    core::AppendJsonNumber(out, s.speed);
  } else {
    out += "\"max\"";
  }
  out += ",\"paused\":";
  out += s.paused ? "true" : "false";
  out += ",\"running\":";
  out += s.running ? "true" : "false";
  out += ",\"records_sent\":" + std::to_string(s.records);
  out += ",\"lag_ms\":" + std::to_string(s.lag_ms);
  out += ",\"max_lateness_ms\":" + std::to_string(s.max_lateness_ms);
  // Progress by trace time over the replayed window; null while unknown.
  out += ",\"window_end_ms\":" + (s.window_last_ms != 0 ? std::to_string(s.window_last_ms) : std::string("null"));
  out += ",\"percent\":";
  if (s.progress.percent) {
    core::AppendJsonNumber(out, std::round(*s.progress.percent * 10) / 10);
  } else {
    out += "null";
  }
  out += ",\"eta_s\":";
  if (s.progress.eta_ms) {
    out += std::to_string((*s.progress.eta_ms + 500) / 1000);
  } else {
    out += "null";
  }
  out += "}";
  return out;
}

struct ReplayControlServer::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  uint16_t port = 0;
  std::function<void()> accept;  // accepts one connection, serves it, and re-arms itself
};

ReplayControlServer::ReplayControlServer(Replayer& replayer) : replayer_(replayer), impl_(std::make_unique<Impl>()) {}

ReplayControlServer::~ReplayControlServer() { Stop(); }

std::pair<int, std::string> ReplayControlServer::Handle(const std::string& method, const std::string& target) {
  const size_t q = target.find('?');
  const std::string path = target.substr(0, q);
  const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
  if (path == "/status") {
    if (method != "GET") return {405, Message("error", "use GET")};
    return {200, ReplayStatusJson(replayer_.status())};
  }
  if (path != "/pause" && path != "/resume" && path != "/seek" && path != "/speed") {
    return {404, Message("error", "unknown path; try /status, /pause, /resume, /seek?t=T, /speed?value=N")};
  }
  if (method != "POST") return {405, Message("error", "use POST")};
  if (path == "/pause") {
    replayer_.Pause();
  } else if (path == "/resume") {
    replayer_.Resume();
  } else if (path == "/seek") {
    const std::string t = QueryParam(query, "t");
    std::optional<int64_t> ms = core::ParseTimeMs(t);
    if (!ms) return {400, Message("error", "t: not unix seconds or ISO 8601 with an offset: '" + t + "'")};
    if (core::Status s = replayer_.Seek(*ms); !s.ok()) return {409, Message("error", s.message())};
  } else {
    const std::string value = QueryParam(query, "value");
    std::optional<double> speed = ParseSpeed(value);
    if (!speed) return {400, Message("error", "value: not max or a positive number: '" + value + "'")};
    replayer_.SetSpeed(*speed);
  }
  return {200, ReplayStatusJson(replayer_.status())};
}

core::Status ReplayControlServer::Start(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return core::Status::Error("control address must be HOST:PORT, got '" + address + "'");
  std::string host = address.substr(0, colon);
  if (host.empty()) host = "127.0.0.1";
  int port = 0;
  try {
    port = std::stoi(address.substr(colon + 1));
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) return core::Status::Error("control address: bad port in '" + address + "'");
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(host, ec);
  if (ec) return core::Status::Error("control address: bad host '" + host + "': " + ec.message());
  const tcp::endpoint endpoint(ip, static_cast<uint16_t>(port));
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return core::Status::Error("control endpoint: cannot listen on " + address + ": " + ec.message());
  impl_->port = impl_->acceptor.local_endpoint().port();

  impl_->accept = [this] {
    impl_->acceptor.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error) return;  // closed: stopping
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> request;
      boost::system::error_code read_error;
      http::read(socket, buffer, request, read_error);
      if (!read_error) {
        auto [code, body] = Handle(std::string(request.method_string()), std::string(request.target()));
        http::response<http::string_body> response{static_cast<http::status>(code), request.version()};
        response.set(http::field::content_type, "application/json");
        response.keep_alive(false);
        response.body() = body + "\n";
        response.prepare_payload();
        boost::system::error_code write_error;
        http::write(socket, response, write_error);
      }
      boost::system::error_code ignored;
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      impl_->accept();
    });
  };
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
  return core::Status::Ok();
}

uint16_t ReplayControlServer::port() const { return impl_->port; }

void ReplayControlServer::Stop() {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace acmetrace::producers
