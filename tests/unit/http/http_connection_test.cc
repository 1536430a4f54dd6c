// HttpConnection as a pure function of the bytes a client sends: limits, malformed requests,
// pipelining, query decoding, a throwing handler. No sockets, no clock.
#include "acmetrace/http/http_connection.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace acmetrace::http {
namespace {

// Echoes what it was given, so a test sees the parsed request.
HttpResponse Echo(const HttpRequest& r) {
  std::string body = r.method + " " + r.path;
  for (const auto& [name, value] : r.query) body += " [" + name + "=" + value + "]";
  if (!r.body.empty()) body += " body=" + r.body;
  return HttpResponse::Text(200, body);
}

struct Response {
  int status = 0;
  std::string head;
  std::string body;
};

// Splits concatenated raw responses (every one has a Content-Length).
std::vector<Response> Responses(std::string raw) {
  std::vector<Response> out;
  while (!raw.empty()) {
    const size_t end = raw.find("\r\n\r\n");
    if (end == std::string::npos) break;
    Response r;
    r.head = raw.substr(0, end + 4);
    r.status = std::stoi(r.head.substr(9, 3));
    const size_t cl = r.head.find("Content-Length: ");
    const size_t length = cl == std::string::npos ? 0 : std::stoul(r.head.substr(cl + 16));
    r.body = raw.substr(end + 4, length);
    raw.erase(0, end + 4 + r.body.size());
    out.push_back(r);
  }
  return out;
}

std::vector<Response> Serve(const std::string& input, const HttpLimits& limits = {}) {
  return Responses(ServeHttpBytes(input, HttpHandler(Echo), limits));
}

TEST(HttpConnectionTest, AnswersARequestAndDecodesItsQuery) {
  const auto r = Serve("GET /seek?t=2023-07-01%2008:00:00%2B08:00&x=a+b HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(r[0].body, "GET /seek [t=2023-07-01 08:00:00+08:00] [x=a b]");
  EXPECT_NE(r[0].head.find("Content-Length: " + std::to_string(r[0].body.size()) + "\r\n"), std::string::npos);
  EXPECT_EQ(r[0].head.find("Connection: close"), std::string::npos);  // HTTP/1.1 keeps the connection
}

TEST(HttpConnectionTest, BadPercentEncodingIs400AndTheNextRequestIsAnswered) {
  const auto r = Serve(
      "POST /seek?t=%zz HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
      "GET /status HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, 400);
  EXPECT_EQ(r[0].body, "query: t: bad percent-encoding '%zz' (expected % and two hex digits)\n");
  EXPECT_EQ(r[1].status, 200);
  EXPECT_EQ(r[1].body, "GET /status");
}

TEST(HttpConnectionTest, TruncatedPercentEscapesAre400) {
  for (const char* query : {"t=%", "t=%4", "t=%g1", "%zz=1", "t=1%"}) {
    const auto r = Serve(std::string("GET /x?") + query + " HTTP/1.0\r\n\r\n");
    ASSERT_EQ(r.size(), 1u) << query;
    EXPECT_EQ(r[0].status, 400) << query;
  }
}

TEST(HttpConnectionTest, PipelinedRequestsAreAnsweredInOrder) {
  std::string input;
  for (const char* path : {"/a", "/b", "/c"}) input += std::string("GET ") + path + " HTTP/1.1\r\nHost: h\r\n\r\n";
  input += "POST /d HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
  const auto r = Serve(input);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].body, "GET /a");
  EXPECT_EQ(r[1].body, "GET /b");
  EXPECT_EQ(r[2].body, "GET /c");
  EXPECT_EQ(r[3].body, "POST /d body=hello");
}

TEST(HttpConnectionTest, ARequestSplitAcrossReadsIsAnsweredOnceWhole) {
  const HttpHandler handler(Echo);
  HttpConnection connection(handler, {});
  const std::string request = "GET /status?a=1 HTTP/1.1\r\nHost: h\r\n\r\n";
  for (char c : request.substr(0, request.size() - 1)) {
    connection.Receive(std::string_view(&c, 1));
    EXPECT_FALSE(connection.Next().has_value());
    EXPECT_TRUE(connection.mid_request());
  }
  connection.Receive("\n");
  const std::optional<HttpOutput> out = connection.Next();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(Responses(out->Bytes())[0].body, "GET /status [a=1]");
  EXPECT_FALSE(connection.mid_request());
  EXPECT_FALSE(connection.closing());
}

TEST(HttpConnectionTest, AChunkedBodyFedAByteAtATimeIsAnswered) {
  // Regression (fuzzing): Boost 1.74 asserted on a final chunk arriving byte by byte.
  const HttpHandler handler(Echo);
  HttpConnection connection(handler, {});
  const std::string request =
      "POST /t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
  std::optional<HttpOutput> out;
  for (char c : request) {
    ASSERT_FALSE(out.has_value());
    connection.Receive(std::string_view(&c, 1));
    out = connection.Next();
  }
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(Responses(out->Bytes()).at(0).body, "POST /t body=hello");
  EXPECT_EQ(Serve("POST /t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").at(0).body, "POST /t");
}

TEST(HttpConnectionTest, HugeUrlIs414) {
  HttpLimits limits;
  const auto within = Serve("GET /" + std::string(limits.max_target_bytes - 1, 'a') + " HTTP/1.0\r\n\r\n");
  ASSERT_EQ(within.size(), 1u);
  EXPECT_EQ(within[0].status, 200);
  // Over the target limit but within the header limit, and over both.
  for (size_t size : {limits.max_target_bytes + 1, limits.max_header_bytes * 2}) {
    const auto r = Serve("GET /" + std::string(size, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(r.size(), 1u) << size;
    EXPECT_EQ(r[0].status, 414) << size;
    EXPECT_EQ(r[0].body, "request target longer than 8192 bytes\n");
    EXPECT_NE(r[0].head.find("Connection: close\r\n"), std::string::npos);
  }
}

TEST(HttpConnectionTest, HugeHeaderIs431AndNothingAfterItIsRead) {
  const auto r = Serve("GET /a HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(20000, 'x') +
                       "\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.size(), 1u);  // the stream is not trusted after a refused request: /b is not answered
  EXPECT_EQ(r[0].status, 431);
  EXPECT_EQ(r[0].body, "request header fields longer than 16384 bytes\n");
  // Many small header fields count together.
  std::string many = "GET /a HTTP/1.1\r\n";
  for (int i = 0; i < 2000; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Serve(many + "\r\n").at(0).status, 431);
}

TEST(HttpConnectionTest, HugeBodyIs413) {
  const auto r = Serve("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n" + std::string(70000, 'b'));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 413);
}

TEST(HttpConnectionTest, MalformedRequestsAre400WithOneLineAndClose) {
  for (const std::string& input :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET /a HTTP/1.1\r\nNo colon\r\n\r\n"),
        std::string("GET http://example/x HTTP/1.1\r\nHost: h\r\n\r\n"),
        std::string("POST /a HTTP/1.1\r\nContent-Length: x\r\n\r\n"), std::string("\x00\x01\x02\r\n\r\n", 7)}) {
    const auto r = Serve(input);
    ASSERT_EQ(r.size(), 1u) << input;
    EXPECT_EQ(r[0].status, 400) << input;
    EXPECT_EQ(r[0].body.find('\n'), r[0].body.size() - 1) << r[0].body;  // one line
    EXPECT_NE(r[0].head.find("Connection: close\r\n"), std::string::npos);
  }
}

TEST(HttpConnectionTest, VersionsOtherThan10And11Are400) {
  for (const char* version : {"HTTP/1.2", "HTTP/2.0", "HTTP/0.9"}) {
    const auto r = Serve(std::string("GET /a ") + version + "\r\nHost: h\r\n\r\n");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 400);
    EXPECT_EQ(r[0].body, "malformed request: bad version\n");
  }
}

TEST(HttpConnectionTest, AnyMethodTokenReachesTheHandler) {
  // The handler decides 405; the parser must not choke on an unknown method.
  const auto r = Serve("BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].body, "BREW /pot");
}

TEST(HttpConnectionTest, HeadAnswersTheLengthWithoutTheBody) {
  const std::string raw = ServeHttpBytes("HEAD /abc HTTP/1.1\r\nHost: h\r\n\r\nGET /d HTTP/1.1\r\nHost: h\r\n\r\n",
                                         HttpHandler(Echo));
  EXPECT_EQ(raw.substr(0, raw.find("\r\n")), "HTTP/1.1 200 OK");
  EXPECT_NE(raw.find("Content-Length: 9\r\n\r\nHTTP/1.1 200 OK"), std::string::npos) << raw;
  EXPECT_EQ(raw.substr(raw.size() - 6), "GET /d");
}

TEST(HttpConnectionTest, Http10ClosesUnlessKeptAlive) {
  const auto closing = Serve("GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n");
  ASSERT_EQ(closing.size(), 1u);
  EXPECT_NE(closing[0].head.find("Connection: close\r\n"), std::string::npos);
  const auto kept = Serve("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n");
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NE(kept[0].head.find("Connection: keep-alive\r\n"), std::string::npos);
}

TEST(HttpConnectionTest, AThrowingHandlerIs500AndTheConnectionGoesOn) {
  const HttpHandler thrower([](const HttpRequest& r) -> HttpResponse {
    if (r.path == "/boom") throw std::runtime_error("stoi");
    return HttpResponse::Text(200, "ok");
  });
  const auto r = Responses(
      ServeHttpBytes("GET /boom HTTP/1.1\r\nHost: h\r\n\r\nGET /fine HTTP/1.1\r\nHost: h\r\n\r\n", thrower));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, 500);
  EXPECT_EQ(r[0].body, "internal error: stoi\n");
  EXPECT_EQ(r[1].status, 200);
}

TEST(HttpConnectionTest, JsonErrorsForJsonEndpoints) {
  HttpLimits limits;
  limits.json_errors = true;
  const auto r = Serve("GET /x?t=%zz HTTP/1.0\r\n\r\n", limits);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].body, "{\"error\":\"query: t: bad percent-encoding '%zz' (expected % and two hex digits)\"}\n");
  EXPECT_NE(r[0].head.find("Content-Type: application/json\r\n"), std::string::npos);
}

TEST(HttpConnectionTest, HeaderValuesFromHandlersCannotSplitTheResponse) {
  const HttpHandler splitter([](const HttpRequest&) {
    HttpResponse r = HttpResponse::Text(200, "x");
    r.headers.emplace_back("X-Note", "a\r\nSet-Cookie: evil");
    return r;
  });
  const std::string raw = ServeHttpBytes("GET / HTTP/1.0\r\n\r\n", splitter);
  EXPECT_NE(raw.find("X-Note: a  Set-Cookie: evil\r\n"), std::string::npos) << raw;
}

}  // namespace
}  // namespace acmetrace::http
