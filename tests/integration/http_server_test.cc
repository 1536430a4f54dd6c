// The HTTP server over real sockets on 127.0.0.1 with short timeouts: stalled and trickling clients
// are closed while others are served, the connection bound answers 503, oversized requests are
// refused without a reset, and `acmetrace replay --control` survives a bad request. Label: http.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "acmetrace/core/clock.h"
#include "acmetrace/http/http_server.h"
#include "acmetrace/producers/replay_control.h"

namespace acmetrace::http {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// Every blocking read of the tests gives up after this: a failure, never a hang.
constexpr int kClientTimeoutMs = 5000;

class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{kClientTimeoutMs / 1000, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  ~Client() { Close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  /// Everything until the server closes (or the client timeout: timed_out()).
  std::string ReadToEnd() {
    std::string out;
    char buf[65536];
    while (true) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      timed_out_ = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      return out;
    }
  }
  /// Reads until `count` whole responses (each with a Content-Length) have arrived.
  std::string ReadResponses(int count) {
    std::string out;
    char buf[65536];
    while (Complete(out) < count) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  /// The server has closed this connection (EOF or reset is waiting), without blocking.
  bool ClosedByServer() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return false;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
  }
  bool timed_out() const { return timed_out_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  static int Complete(const std::string& raw) {
    int count = 0;
    size_t at = 0;
    while (true) {
      const size_t end = raw.find("\r\n\r\n", at);
      if (end == std::string::npos) return count;
      const size_t cl = raw.find("Content-Length: ", at);
      const size_t length = cl == std::string::npos || cl > end ? 0 : std::stoul(raw.substr(cl + 16));
      if (raw.size() < end + 4 + length) return count;
      at = end + 4 + length;
      ++count;
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  bool timed_out_ = false;
};

int StatusOf(const std::string& raw) { return raw.size() >= 12 ? std::stoi(raw.substr(9, 3)) : 0; }

HttpResponse Hello(const HttpRequest& r) { return HttpResponse::Text(200, "hello " + r.path + "\n"); }

HttpServerOptions Options(int max_connections = 8, int64_t request_timeout_ms = 300) {
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.threads = 1;  // the worst case: one thread for everyone
  options.max_connections = max_connections;
  options.request_timeout_ms = request_timeout_ms;
  options.response_timeout_ms = 2000;
  return options;
}

const std::string kGet = "GET /status HTTP/1.1\r\nHost: t\r\n\r\n";

TEST(HttpServerTest, BadPercentEncodingIs400AndTheConnectionAnswersTheNextRequest) {
  HttpServer server(Hello, Options());
  ASSERT_TRUE(server.Start().ok());
  Client c(server.port());
  ASSERT_TRUE(c.Send("POST /seek?t=%zz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
  const std::string first = c.ReadResponses(1);
  EXPECT_EQ(StatusOf(first), 400) << first;
  ASSERT_TRUE(c.Send(kGet));
  const std::string second = c.ReadResponses(1);
  EXPECT_EQ(StatusOf(second), 200) << second;
  EXPECT_NE(second.find("hello /status"), std::string::npos);
}

TEST(HttpServerTest, PipelinedRequestsAreBothAnswered) {
  HttpServer server(Hello, Options());
  ASSERT_TRUE(server.Start().ok());
  Client c(server.port());
  ASSERT_TRUE(c.Send("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  const std::string raw = c.ReadToEnd();
  const size_t a = raw.find("hello /a");
  const size_t b = raw.find("hello /b");
  ASSERT_NE(a, std::string::npos) << raw;
  ASSERT_NE(b, std::string::npos) << raw;
  EXPECT_LT(a, b);
  EXPECT_FALSE(c.timed_out());  // closed after the second, as it asked
}

TEST(HttpServerTest, AStalledClientDoesNotBlockOthersAndIsClosedAfterTheTimeout) {
  // The reproduction: a request without its final blank line held the only thread.
  HttpServer server(Hello, Options(8, 300));
  ASSERT_TRUE(server.Start().ok());
  Client stalled(server.port());
  ASSERT_TRUE(stalled.Send("GET /status HTTP/1.1\r\nHost: t\r\n"));
  const auto start = SteadyClock::now();
  for (int i = 0; i < 3; ++i) {
    Client other(server.port());
    ASSERT_TRUE(other.Send(kGet));
    EXPECT_EQ(StatusOf(other.ReadResponses(1)), 200);
  }
  const std::string rest = stalled.ReadToEnd();  // returns when the server closes it
  EXPECT_FALSE(stalled.timed_out()) << "the stalled connection was not closed";
  EXPECT_EQ(rest, "");
  EXPECT_GE(SteadyClock::now() - start, milliseconds(250));  // not before its timeout
}

TEST(HttpServerTest, ATricklingClientIsClosedAtItsRequestDeadline) {
  // One byte every 50 ms never completes a request: the deadline is the request's, not each read's.
  HttpServer server(Hello, Options(8, 300));
  ASSERT_TRUE(server.Start().ok());
  Client slow(server.port());
  const std::string request = "GET /status HTTP/1.1\r\nHost: t\r\nX-Padding: " + std::string(200, 'p');
  const auto start = SteadyClock::now();
  bool closed = false;
  for (char byte : request) {
    if (!slow.Send(std::string(1, byte)) || slow.ClosedByServer()) {
      closed = true;
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(SteadyClock::now() - start, milliseconds(3000));
}

TEST(HttpServerTest, MoreConnectionsThanTheBoundAre503ThenServedOnceOneCloses) {
  HttpServer server(Hello, Options(2, 60'000));
  ASSERT_TRUE(server.Start().ok());
  Client a(server.port());
  Client b(server.port());
  ASSERT_TRUE(a.Send("GET /a HTTP/1.1\r\n"));  // both hold their slot, mid-request
  ASSERT_TRUE(b.Send("GET /b HTTP/1.1\r\n"));
  // Accepts are in order: once c is refused, a and b are known to hold the slots.
  Client c(server.port());
  ASSERT_TRUE(c.Send(kGet));
  const std::string refused = c.ReadToEnd();
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  EXPECT_NE(refused.find("too many connections (limit 2); try again"), std::string::npos);
  EXPECT_NE(refused.find("Retry-After: 1\r\n"), std::string::npos);
  a.Close();
  // The server frees a's slot when it sees the close: retry for a bounded time.
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 200; ++attempt) {
    Client d(server.port());
    d.Send(kGet);
    status = StatusOf(d.ReadResponses(1));
    if (status != 200) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(status, 200);
}

TEST(HttpServerTest, SlotsAreReturnedAfterEveryKindOfEnd) {
  HttpServer server(Hello, Options(2, 300));
  ASSERT_TRUE(server.Start().ok());
  for (int i = 0; i < 50; ++i) {
    Client c(server.port());
    c.Send(i % 3 == 0 ? kGet : i % 3 == 1 ? std::string("BAD\r\n\r\n") : std::string("GET /x?%zz HTTP/1.0\r\n\r\n"));
    c.ReadResponses(1);
    c.Close();
  }
  // Give the server a bounded time to see the last closes, then it must serve again.
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 200; ++attempt) {
    Client c(server.port());
    c.Send("GET /x HTTP/1.0\r\n\r\n");
    status = StatusOf(c.ReadToEnd());
    if (status != 200) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(status, 200);
}

TEST(HttpServerTest, HugeUrlIs414AndHugeHeaderIs431BeforeTheClientIsDone) {
  HttpServer server(Hello, Options());
  ASSERT_TRUE(server.Start().ok());
  {
    Client c(server.port());
    ASSERT_TRUE(c.Send("GET /" + std::string(100'000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    const std::string raw = c.ReadToEnd();
    EXPECT_EQ(StatusOf(raw), 414) << raw.substr(0, 200);
    EXPECT_NE(raw.find("request target longer than 8192 bytes\n"), std::string::npos);
  }
  {
    // 600 KB of header fields: more than the socket buffers hold, so the server answers while the
    // client is still sending; the answer must survive (no reset before it is read).
    Client c(server.port());
    std::string request = "GET / HTTP/1.1\r\nHost: t\r\n";
    for (int i = 0; i < 6000; ++i) request += "X-Field-" + std::to_string(i) + ": " + std::string(90, 'v') + "\r\n";
    ASSERT_TRUE(c.Send(request + "\r\n"));
    const std::string raw = c.ReadToEnd();
    EXPECT_EQ(StatusOf(raw), 431) << raw.substr(0, 200);
    EXPECT_NE(raw.find("request header fields longer than 16384 bytes\n"), std::string::npos);
  }
  Client after(server.port());
  ASSERT_TRUE(after.Send(kGet));
  EXPECT_EQ(StatusOf(after.ReadResponses(1)), 200);
}

TEST(HttpServerTest, ConcurrentClientsOnSeveralThreadsAreAllAnswered) {
  HttpServerOptions options = Options(64, 5000);
  options.threads = 4;
  HttpServer server(Hello, options);
  ASSERT_TRUE(server.Start().ok());
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      Client c(server.port());
      for (int i = 0; i < 25; ++i) {
        if (!c.Send(kGet)) return;
        if (StatusOf(c.ReadResponses(1)) == 200) ++answered;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered.load(), 8 * 25);
}

TEST(HttpServerTest, StopClosesOpenConnections) {
  HttpServer server(Hello, Options(8, 60'000));
  ASSERT_TRUE(server.Start().ok());
  Client stalled(server.port());
  ASSERT_TRUE(stalled.Send("GET / HTTP/1.1\r\n"));
  Client idle(server.port());
  ASSERT_TRUE(idle.Send(kGet));
  EXPECT_EQ(StatusOf(idle.ReadResponses(1)), 200);
  server.Stop();
  stalled.ReadToEnd();
  EXPECT_FALSE(stalled.timed_out());
  idle.ReadToEnd();
  EXPECT_FALSE(idle.timed_out());
}

TEST(HttpServerTest, APortInUseSaysSoInOneLine) {
  HttpServer first(Hello, Options());
  ASSERT_TRUE(first.Start().ok());
  HttpServerOptions options = Options();
  options.listen = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second(Hello, options);
  EXPECT_EQ(second.Start().message(), "cannot listen on " + options.listen + ": address already in use");
}

TEST(HttpServerTest, PortAloneListensOnEveryInterface) {
  HttpServerOptions options = Options();
  options.listen = ":0";
  HttpServer server(Hello, options);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.base_url(), "http://127.0.0.1:" + std::to_string(server.port()));
  Client c(server.port());
  ASSERT_TRUE(c.Send(kGet));
  EXPECT_EQ(StatusOf(c.ReadResponses(1)), 200);
}

// `acmetrace replay --control` through the real binary: the issue's %zz seek is a 400 and the
// replay goes on to the end.
TEST(ReplayControlEndpointTest, BadSeekIs400AndTheReplayGoesOn) {
  int err_pipe[2];
  ASSERT_EQ(::pipe(err_pipe), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string data = std::string(ACMETRACE_FIXTURES) + "/release";
  std::vector<std::string> args = {ACMETRACE_BINARY, "replay", "--data", data, "--speed", "1",
                                   "--sink", "null", "--control", "127.0.0.1:0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, ACMETRACE_BINARY, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(err_pipe[1]);

  // Reads stderr until `needle` (or EOF / the client timeout).
  std::string err;
  auto read_until = [&](const std::string& needle) {
    char buf[4096];
    while (err.find(needle) == std::string::npos) {
      pollfd p{err_pipe[0], POLLIN, 0};
      p.revents = 0;
      if (::poll(&p, 1, kClientTimeoutMs) != 1) return false;
      const ssize_t n = ::read(err_pipe[0], buf, sizeof buf);
      if (n <= 0) return false;
      err.append(buf, static_cast<size_t>(n));
    }
    return true;
  };
  ASSERT_TRUE(read_until("/status\n")) << err;
  const size_t at = err.find("http://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << err;
  const uint16_t port = static_cast<uint16_t>(std::stoi(err.substr(at + 17)));

  auto call = [port](const std::string& request) {
    Client c(port);
    c.Send(request);
    return c.ReadToEnd();
  };
  const std::string bad = call("POST /seek?t=%zz HTTP/1.0\r\n\r\n");
  EXPECT_EQ(StatusOf(bad), 400) << bad;
  EXPECT_NE(bad.find("{\"error\":\"query: t: bad percent-encoding '%zz'"), std::string::npos) << bad;
  const std::string status = call("GET /status HTTP/1.0\r\n\r\n");
  EXPECT_EQ(StatusOf(status), 200) << status;
  EXPECT_NE(status.find("\"running\":true"), std::string::npos) << status;
  EXPECT_EQ(StatusOf(call("POST /speed?value=max HTTP/1.0\r\n\r\n")), 200);

  EXPECT_TRUE(read_until("input errors")) << err;
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ::close(err_pipe[0]);
  ASSERT_TRUE(WIFEXITED(wstatus)) << err;
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << err;
  EXPECT_NE(err.find("replay: 21 records"), std::string::npos) << err;  // every record, as without --control
}

TEST(ReplayControlEndpointTest, APortInUseSaysSo) {
  HttpServer first(Hello, Options());
  ASSERT_TRUE(first.Start().ok());
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  class NullSink : public core::RecordSink {
   public:
    core::Status Write(const core::Record&) override { return core::Status::Ok(); }
    core::Status Flush() override { return core::Status::Ok(); }
  } sink;
  producers::SourceFactory factory = [](producers::TimeRange) -> core::Result<std::unique_ptr<producers::RecordSource>> {
    return core::Status::Error("unused");
  };
  producers::Replayer replayer(factory, producers::TimeRange{}, sink, clock, errors, producers::ReplayOptions{});
  producers::ReplayControlServer control(replayer);
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  EXPECT_EQ(control.Start(address).message(), "control endpoint: cannot listen on " + address + ": address already in use");
}

}  // namespace
}  // namespace acmetrace::http
