// HttpServer: an Asio acceptor and N threads; each connection is a Session on its own strand that
// reads into an HttpConnection under a per-request deadline and writes its responses in order.
#include "acmetrace/http/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <thread>
#include <vector>

namespace acmetrace::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// After a closing response, what the client still sends is read and dropped for at most this long
// (or this many bytes): closing a socket with unread bytes resets the connection, and the reset can
// destroy the response before the client has read it (nginx's lingering close).
constexpr std::chrono::milliseconds kMaxLinger{2000};
constexpr size_t kMaxLingerBytes = 1 << 20;

// What every session of one server shares; sessions keep it alive until the last one ends.
struct Shared {
  HttpHandler handler;
  HttpServerOptions options;
  std::atomic<int> serving{0};   // sessions counted against max_connections
  std::atomic<int> refusing{0};  // sessions answering 503, bounded the same way
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Shared> shared, bool refuse)
      : shared_(std::move(shared)),
        stream_(std::move(socket)),
        connection_(shared_->handler, shared_->options.limits),
        refuse_(refuse) {
    (refuse_ ? shared_->refusing : shared_->serving)++;
  }
  ~Session() { (refuse_ ? shared_->refusing : shared_->serving)--; }

  void Start() {
    deadline_ = Clock::now() + std::chrono::milliseconds(shared_->options.request_timeout_ms);
    if (!refuse_) {
      Process();
      return;
    }
    HttpResponse busy = ErrorResponse(
        503, "too many connections (limit " + std::to_string(shared_->options.max_connections) + "); try again",
        shared_->options.limits.json_errors);
    busy.headers.emplace_back("Retry-After", "1");
    Write(ClosingOutput(busy));
  }

 private:
  void Process() {
    if (std::optional<HttpOutput> output = connection_.Next()) {
      Write(std::move(*output));
    } else if (connection_.closing()) {
      Linger();
    } else {
      Read();
    }
  }

  void Read() {
    // The deadline is the request's, not the read's: a client trickling a byte at a time does not
    // keep its connection.
    stream_.expires_at(deadline_);
    stream_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                              if (ec) return self->Close();  // the timeout, the peer closing, a reset
                              self->connection_.Receive(std::string_view(self->buffer_.data(), n));
                              self->Process();
                            });
  }

  void Write(HttpOutput output) {
    output_ = std::move(output);
    std::vector<asio::const_buffer> buffers{asio::buffer(output_.head)};
    if (output_.body && !output_.body->empty()) buffers.push_back(asio::buffer(*output_.body));
    stream_.expires_after(std::chrono::milliseconds(shared_->options.response_timeout_ms));
    asio::async_write(stream_, buffers, [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
      if (ec) return self->Close();
      self->output_ = {};
      if (self->refuse_ || self->connection_.closing()) return self->Linger();
      self->deadline_ = Clock::now() + std::chrono::milliseconds(self->shared_->options.request_timeout_ms);
      self->Process();
    });
  }

  void Linger() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    deadline_ = Clock::now() + std::min(kMaxLinger, std::chrono::milliseconds(shared_->options.request_timeout_ms));
    Drain();
  }

  void Drain() {
    stream_.expires_at(deadline_);
    stream_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ > kMaxLingerBytes) return self->Close();
                              self->Drain();
                            });
  }

  void Close() { stream_.close(); }

  std::shared_ptr<Shared> shared_;  // first: the connection refers to its handler
  beast::tcp_stream stream_;
  HttpConnection connection_;
  const bool refuse_;
  Clock::time_point deadline_;
  std::array<char, 16 * 1024> buffer_;
  HttpOutput output_;  // being written
  size_t drained_ = 0;
};

std::string Describe(const boost::system::error_code& ec) {
  if (ec == asio::error::address_in_use) return "address already in use";
  if (ec == asio::error::access_denied) return "permission denied (ports below 1024 need privileges)";
  if (ec == boost::system::errc::address_not_available) return "address not available on this machine";
  std::string text = ec.message();
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

core::Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return core::Status::Error("expected HOST:PORT or :PORT, got " + QuoteForMessage(text));
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return core::Status::Error("bad port " + QuoteForMessage(port_text) + " (expected 0..65535)");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  ListenAddress address;
  address.port = static_cast<uint16_t>(port);
  address.host = host.empty() ? "0.0.0.0" : host == "localhost" ? "127.0.0.1" : std::string(host);
  boost::system::error_code parse_error;
  asio::ip::make_address(address.host, parse_error);
  if (parse_error) {
    return core::Status::Error("not an IP address: " + QuoteForMessage(host) +
                               " (use an address such as 127.0.0.1 or 0.0.0.0, or :PORT for every interface)");
  }
  return address;
}

struct HttpServer::Impl {
  std::shared_ptr<Shared> shared;
  std::unique_ptr<asio::io_context> io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> retry;  // re-arms accept after an error such as EMFILE
  std::vector<std::thread> threads;

  void Accept() {
    acceptor->async_accept(asio::make_strand(*io), [this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;  // stopping
      if (ec) {
        // Out of descriptors or similar: wait a little rather than spin on the same error.
        retry->expires_after(std::chrono::milliseconds(100));
        retry->async_wait([this](const boost::system::error_code& wait_error) {
          if (!wait_error) Accept();
        });
        return;
      }
      const int limit = shared->options.max_connections;
      if (shared->serving.load() < limit) {
        std::make_shared<Session>(std::move(socket), shared, false)->Start();
      } else if (shared->refusing.load() < limit) {
        std::make_shared<Session>(std::move(socket), shared, true)->Start();
      }  // else: the socket closes here, unanswered: even the 503s are at their bound
      Accept();
    });
  }
};

HttpServer::HttpServer(HttpHandler handler, HttpServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  impl_->shared = std::make_shared<Shared>();
  impl_->shared->handler = std::move(handler);
  impl_->shared->options = options_;
}

HttpServer::~HttpServer() { Stop(); }

core::Status HttpServer::Start() {
  const std::string prefix = "cannot listen on " + options_.listen + ": ";
  core::Result<ListenAddress> address = ParseListenAddress(options_.listen);
  if (!address.ok()) return core::Status::Error(prefix + address.status().message());
  if (options_.threads < 1 || options_.max_connections < 1 || options_.request_timeout_ms < 1 ||
      options_.response_timeout_ms < 1) {
    return core::Status::Error(prefix + "threads, max_connections and timeouts must be > 0");
  }
  impl_->io = std::make_unique<asio::io_context>(options_.threads);
  impl_->acceptor = std::make_unique<tcp::acceptor>(*impl_->io);
  impl_->retry = std::make_unique<asio::steady_timer>(*impl_->io);
  const tcp::endpoint endpoint(asio::ip::make_address(address.value().host), address.value().port);
  boost::system::error_code ec;
  impl_->acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor->bind(endpoint, ec);
  if (!ec) impl_->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    impl_->acceptor.reset();
    impl_->retry.reset();
    impl_->io.reset();
    return core::Status::Error(prefix + Describe(ec));
  }
  port_ = impl_->acceptor->local_endpoint().port();
  const asio::ip::address bound = endpoint.address();
  if (bound.is_unspecified()) {
    url_host_ = bound.is_v6() ? "[::1]" : "127.0.0.1";
  } else {
    url_host_ = bound.is_v6() ? "[" + bound.to_string() + "]" : bound.to_string();
  }
  impl_->Accept();
  for (int i = 0; i < options_.threads; ++i) impl_->threads.emplace_back([this] { impl_->io->run(); });
  return core::Status::Ok();
}

void HttpServer::Stop() {
  if (impl_->threads.empty()) return;
  impl_->io->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  // Destroying the io_context destroys the sessions its pending handlers hold: their sockets close.
  impl_->acceptor.reset();
  impl_->retry.reset();
  impl_->io.reset();
}

std::string HttpServer::base_url() const { return "http://" + url_host_ + ":" + std::to_string(port_); }

}  // namespace acmetrace::http
