// The parts of the query_range client that need no network: the split at 11,000 points, joining the
// chunks, the answer's JSON, the URL.
#include "acmetrace/scoring/range_query.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <fstream>
#include <mutex>
#include <thread>

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;

TEST(SplitRangeTest, NoChunkHasMoreThanElevenThousandPoints) {
  // 11,000 points exactly: one request.
  EXPECT_EQ(SplitRange(kT0, kT0 + 10'999 * 15'000, 15'000).size(), 1u);
  // One more: two, the second starting on the grid right after the first.
  const std::vector<RangeChunk> two = SplitRange(kT0, kT0 + 11'000 * 15'000, 15'000);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].end_ms, kT0 + 10'999 * 15'000);
  EXPECT_EQ(two[1].start_ms, kT0 + 11'000 * 15'000);
  EXPECT_EQ(two[1].end_ms, kT0 + 11'000 * 15'000);
  // A week at 15 s: 40,321 points, four requests covering each point once.
  const int64_t week = 7 * 86'400'000LL;
  const std::vector<RangeChunk> chunks = SplitRange(kT0, kT0 + week, 15'000);
  ASSERT_EQ(chunks.size(), 4u);
  int64_t points = 0;
  int64_t next = kT0;
  for (const RangeChunk& c : chunks) {
    EXPECT_EQ(c.start_ms, next);
    const int64_t n = (c.end_ms - c.start_ms) / 15'000 + 1;
    EXPECT_LE(n, kMaxPointsPerQuery);
    points += n;
    next = c.end_ms + 15'000;
  }
  EXPECT_EQ(points, week / 15'000 + 1);
  // An end between grid points: the last point is the last on the grid.
  EXPECT_EQ(SplitRange(kT0, kT0 + 59'000, 15'000).back().end_ms, kT0 + 45'000);
  EXPECT_TRUE(SplitRange(kT0, kT0 - 1, 15'000).empty());
}

TEST(SplitRangeTest, ChunksAreJoinedSeriesBySeries) {
  int calls = 0;
  auto one = [&](const RangeChunk& c) -> core::Result<RangeAnswer> {
    ++calls;
    RangeAnswer out;
    out.series.push_back({{{"gpu", "0"}}, {c.start_ms}});
    if (calls == 2) {
      out.series.push_back({{{"gpu", "1"}}, {c.end_ms}});
      out.bad_samples = 2;
      out.first_bad_sample = "time '1e308' is outside";
    }
    return out;
  };
  core::Result<RangeAnswer> got = QueryInChunks(one, kT0, kT0 + 20 * 60'000, 60'000, 10);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(calls, 3);  // 21 points, 10 per chunk
  ASSERT_EQ(got.value().series.size(), 2u);
  EXPECT_EQ(got.value().series[0].ts_ms, (std::vector<int64_t>{kT0, kT0 + 10 * 60'000, kT0 + 20 * 60'000}));
  EXPECT_EQ(got.value().series[1].labels.at("gpu"), "1");
  EXPECT_EQ(got.value().bad_samples, 2);
  EXPECT_EQ(got.value().first_bad_sample, "time '1e308' is outside");
  // A failing chunk fails the query.
  auto failing = [&](const RangeChunk&) -> core::Result<RangeAnswer> { return core::Status::Error("down"); };
  EXPECT_EQ(QueryInChunks(failing, kT0, kT0 + 60'000, 60'000).status().message(), "down");
}

TEST(SplitRangeTest, AnswersHoldingMoreThanTheSampleLimitAreAnError) {
  int calls = 0;
  auto one = [&](const RangeChunk& c) -> core::Result<RangeAnswer> {
    ++calls;
    RangeAnswer out;
    for (int gpu = 0; gpu < 4; ++gpu) out.series.push_back({{{"gpu", std::to_string(gpu)}}, {c.start_ms, c.end_ms}});
    return out;
  };
  // Three chunks of 8 samples: 24 fit a limit of 24, not one of 20 (stopped at the third chunk).
  EXPECT_TRUE(QueryInChunks(one, kT0, kT0 + 29 * 60'000, 60'000, 10, 24).ok());
  calls = 0;
  core::Result<RangeAnswer> got = QueryInChunks(one, kT0, kT0 + 29 * 60'000, 60'000, 10, 20);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(calls, 3);
  EXPECT_NE(got.status().message().find("more than 20 samples"), std::string::npos) << got.status().message();
}

TEST(SplitRangeTest, ARequestAsksNoMoreThanItsAnswerCanHoldWithinTheBodyBound) {
  // The bound is what a real answer can be: the envelope, and per series its labels and its samples.
  EXPECT_EQ(AnswerBodyLimit(1), kAnswerEnvelopeBytes + kMaxSeriesPerAnswer * (kMaxSeriesHeaderBytes + kMaxSampleBytes));
  EXPECT_LE(AnswerBodyLimit(kPointsPerRequest), int64_t{512} << 20);
  // The longest sample Prometheus writes fits kMaxSampleBytes.
  EXPECT_LE(static_cast<int64_t>(std::string_view(R"([1688169600.123,"-1.2345678901234567e+308"],)").size()),
            kMaxSampleBytes);
}

TEST(QueryRangeResponseTest, ParsesAMatrix) {
  core::Result<RangeAnswer> got = ParseQueryRangeResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"cluster":"seren","kind":"gpu_overheat"},"values":[[1688169600,"1"],[1688169660.5,"NaN"]]},)"
      R"({"metric":{},"values":[]}]}})");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().series.size(), 2u);
  EXPECT_EQ(got.value().series[0].labels.at("kind"), "gpu_overheat");
  EXPECT_EQ(got.value().series[0].ts_ms, (std::vector<int64_t>{kT0, kT0 + 60'500}));
  EXPECT_EQ(got.value().bad_samples, 0);
}

TEST(QueryRangeResponseTest, HostileSampleTimesAreCountedAndLeftOut) {
  // A forged answer: times no Prometheus writes. Each is counted, the first one said; the good samples stay.
  core::Result<RangeAnswer> got = ParseQueryRangeResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[)"
      R"([1e308,"1"],[1688169600,"1"],[-1688169600,"1"],["NaN","1"],[1e999,"1"],[1688169600.0004,"1"],)"
      R"([1688169660,"1"],[1688169660,"1"],[1688169620,"1"],[{"x":1},"1"],[1688169720.25,"1"]]}]}})");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().series.size(), 1u);
  EXPECT_EQ(got.value().series[0].ts_ms, (std::vector<int64_t>{kT0, kT0 + 60'000, kT0 + 120'250}));
  EXPECT_EQ(got.value().bad_samples, 8);
  EXPECT_EQ(got.value().first_bad_sample, "time '1e308' is outside the accepted years 2000-2099");
}

TEST(QueryRangeResponseTest, ALongErrorMessageIsCutToOneLine) {
  const std::string message(100 * 1024, 'x');
  core::Result<RangeAnswer> got =
      ParseQueryRangeResponse(R"({"status":"error","errorType":"bad\ndata","error":")" + message + "\\n\"}");
  ASSERT_FALSE(got.ok());
  EXPECT_LT(got.status().message().size(), 300u) << got.status().message();
  EXPECT_NE(got.status().message().find("(102401 bytes)"), std::string::npos) << got.status().message();
  EXPECT_EQ(got.status().message().find('\n'), std::string::npos);
  // Not JSON: the body echoed cut too.
  got = ParseQueryRangeResponse(std::string(100 * 1024, '<'));
  ASSERT_FALSE(got.ok());
  EXPECT_LT(got.status().message().size(), 300u);
}

TEST(QueryRangeResponseTest, AnErrorAnswerInBrokenJsonIsNotReadPastItsBreak) {
  // Found by query_range_fuzz: the second field lookup after a broken one used simdjson's parser
  // after it had given up (undefined behaviour).
  core::Result<RangeAnswer> got = ParseQueryRangeResponse(R"({"status":"error","errr"::1:"5error> 5nex1b[2J"})");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Prometheus answered an error, in broken JSON");
  got = ParseQueryRangeResponse(R"({"status":"error","errorType":7,"error":"down"})");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Prometheus answered an error (?): down");
}

TEST(QueryRangeResponseTest, MoreSeriesThanAnAnswerMayHoldIsAnError) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  for (int64_t i = 0; i <= kMaxSeriesPerAnswer; ++i) {
    body += (i > 0 ? "," : "") + std::string(R"({"metric":{"i":")") + std::to_string(i) + R"("},"values":[]})";
  }
  body += "]}}";
  core::Result<RangeAnswer> got = ParseQueryRangeResponse(body);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("more than 10000 series"), std::string::npos) << got.status().message();
}

TEST(QueryRangeResponseTest, ErrorsSayWhatPrometheusSaid) {
  core::Result<RangeAnswer> got = ParseQueryRangeResponse(
      R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected <op:>>"})");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "Prometheus answered an error (bad_data): 1:5: parse error: unexpected <op:>>");
  EXPECT_FALSE(ParseQueryRangeResponse("<html>502 Bad Gateway</html>").ok());
  EXPECT_FALSE(ParseQueryRangeResponse(R"({"status":"success","data":{"resultType":"vector","result":[]}})").ok());
  EXPECT_FALSE(ParseQueryRangeResponse(R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[]]}]}})").ok());
  EXPECT_FALSE(ParseQueryRangeResponse(R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[7]}]}})").ok());
}

// A "Prometheus" on a free 127.0.0.1 port answering one request with `head`, then `chunk` again and
// again (up to `max_bytes`, or until the client hangs up).
class HostileServer {
 public:
  HostileServer(std::string head, std::string chunk, size_t max_bytes) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, head, chunk, max_bytes] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        request_ = request;
      }
      bool ok = ::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size());
      for (size_t sent = 0; ok && !chunk.empty() && sent < max_bytes; sent += chunk.size()) {
        ok = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(chunk.size());
        sent_ = sent + chunk.size();
      }
      ::close(fd);
    });
  }
  ~HostileServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  size_t sent() const { return sent_; }
  // The request's head as received.
  std::string request() {
    std::lock_guard<std::mutex> lock(mutex_);
    return request_;
  }

 private:
  std::mutex mutex_;
  std::string request_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<size_t> sent_{0};
};

TEST(PrometheusClientTest, AServerStreamingBytesIsCutAtTheBodyLimit) {
  // Chunked, endless: the client stops at its limit (1 MiB here), not at the end of memory.
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
  HostileServer server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                       chunk, size_t{256} << 20);
  auto client = PrometheusClient::Create(server.url(), 10'000);
  ASSERT_TRUE(client.ok());
  int status = 0;
  std::string body;
  const core::Status got = client.value()->Get("/api/v1/query_range", status, body, int64_t{1} << 20);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.message().find("the answer is longer than 1048576 bytes"), std::string::npos) << got.message();
  EXPECT_TRUE(body.empty());
}

TEST(PrometheusClientTest, AContentLengthOverTheLimitIsRefusedUnread) {
  HostileServer server("HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\n", "", 0);
  auto client = PrometheusClient::Create(server.url(), 10'000);
  ASSERT_TRUE(client.ok());
  int status = 0;
  std::string body;
  const core::Status got = client.value()->Get("/", status, body, int64_t{1} << 20);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.message().find("longer than 1048576 bytes"), std::string::npos) << got.message();
}

TEST(PrometheusClientTest, AForgedSampleTimeOfARealRequestIsCountedNotConverted) {
  const std::string json =
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":)"
      R"([[1e308,"1"],[1688169600,"1"]]}]}})";
  HostileServer server("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(json.size()) + "\r\n\r\n" + json, "",
                       0);
  auto client = PrometheusClient::Create(server.url(), 10'000);
  ASSERT_TRUE(client.ok());
  core::Result<RangeAnswer> got = client.value()->QueryRange("up", kT0, kT0 + 60'000, 60'000);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value().bad_samples, 1);
  ASSERT_EQ(got.value().series.size(), 1u);
  EXPECT_EQ(got.value().series[0].ts_ms, std::vector<int64_t>{kT0});
}

TEST(PrometheusUrlTest, ParsesHostPortAndPrefix) {
  core::Result<PrometheusUrl> url = ParsePrometheusUrl("http://127.0.0.1:9090");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url.value().host, "127.0.0.1");
  EXPECT_EQ(url.value().port, "9090");
  EXPECT_EQ(url.value().path_prefix, "");
  url = ParsePrometheusUrl("http://prom.example/prometheus/");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url.value().port, "80");
  EXPECT_EQ(url.value().path_prefix, "/prometheus");
  url = ParsePrometheusUrl("http://[::1]:9090");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url.value().host, "::1");
}

TEST(PrometheusUrlTest, MalformedUrlsAreErrorsThatSayWhy) {
  for (const char* bad : {"127.0.0.1:9090", "ftp://prom:9090", "http://", "http://:9090", "http://h:port",
                          "http://h:99999", "http://h:0", "http://u@h:9090", "https://u:p@h", "http://h:9090/?q=1",
                          "http://[::1", "http://h h:9090", "http://h:9090/a b"}) {
    core::Result<PrometheusUrl> url = ParsePrometheusUrl(bad);
    ASSERT_FALSE(url.ok()) << bad;
    EXPECT_EQ(url.status().message().rfind("--prometheus: \"" + std::string(bad) + "\": ", 0), 0u)
        << url.status().message();
  }
}

TEST(PrometheusUrlTest, HttpsIsAcceptedOnPort443ByDefault) {
  core::Result<PrometheusUrl> url = ParsePrometheusUrl("https://mimir.example/prometheus");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url.value().scheme, "https");
  EXPECT_EQ(url.value().port, "443");
  EXPECT_EQ(url.value().Base(), "https://mimir.example:443/prometheus");
  EXPECT_EQ(ParsePrometheusUrl("http://[::1]:9090/").value().Base(), "http://[::1]:9090");
}

TEST(ClientFlagsTest, HeadersAreNameColonValueAndTheirValuesAreNeverEchoed) {
  auto got = ParseHeaderFlag("X-Scope-OrgID:  team-a ");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), (std::pair<std::string, std::string>{"X-Scope-OrgID", "team-a"}));
  EXPECT_EQ(ParseHeaderFlag("Authorization: Bearer a:b").value().second, "Bearer a:b");
  const std::pair<const char*, const char*> bad[] = {
      {"X-Scope-OrgID team-a", "no ':'"},
      {": secret", "no header name"},
      {"X Scope: secret", "is not an HTTP header name"},
      {"X-Key: sec\r\nX-Injected: ret", "holds a control character"},
      {"X-Key:   ", "is empty"},
      {"Host: other", "set by the client"},
  };
  for (const auto& [text, why] : bad) {
    got = ParseHeaderFlag(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().message().rfind("--header: ", 0), 0u) << got.status().message();
    EXPECT_NE(got.status().message().find(why), std::string::npos) << got.status().message();
    EXPECT_EQ(got.status().message().find("secret"), std::string::npos) << got.status().message();
    EXPECT_EQ(got.status().message().find("ret"), std::string::npos) << got.status().message();
  }
}

TEST(ClientFlagsTest, SecretFilesAreOneLineAndTheirErrorsNameTheFileNotTheSecret) {
  const std::string dir = testing::TempDir();
  const std::string token = dir + "/token";
  std::ofstream(token) << "s3cr3t-token\n";
  EXPECT_EQ(ReadBearerTokenFile(token).value(), "s3cr3t-token");
  const std::string auth = dir + "/auth";
  std::ofstream(auth) << "scorer:pa:ss\r\n";
  core::Result<BasicAuth> basic = ReadBasicAuthFile(auth);
  ASSERT_TRUE(basic.ok()) << basic.status().message();
  EXPECT_EQ(basic.value().user, "scorer");
  EXPECT_EQ(basic.value().password, "pa:ss");

  EXPECT_EQ(ReadBearerTokenFile(dir + "/missing").status().message(),
            "--bearer-token-file: " + dir + "/missing: cannot open: No such file or directory");
  EXPECT_EQ(ReadBearerTokenFile(dir).status().message(), "--bearer-token-file: " + dir + ": not a regular file");
  std::ofstream(token, std::ios::trunc) << "\n";
  EXPECT_EQ(ReadBearerTokenFile(token).status().message(), "--bearer-token-file: " + token + ": empty");
  std::ofstream(token, std::ios::trunc) << "s3cr3t\nsecond line\n";
  EXPECT_EQ(ReadBearerTokenFile(token).status().message(),
            "--bearer-token-file: " + token + ": holds a line break or control character (one line expected)");
  std::ofstream(auth, std::ios::trunc) << "s3cr3t\n";
  EXPECT_EQ(ReadBasicAuthFile(auth).status().message(),
            "--basic-auth-file: " + auth + ": expected one line user:password");
}

TEST(PrometheusClientTest, CredentialsAndHeadersGoWithEachRequest) {
  const std::string json = R"({"status":"success","data":{"resultType":"matrix","result":[]}})";
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(json.size()) + "\r\n\r\n" + json;
  {
    HostileServer server(answer, "", 0);
    ClientOptions options;
    options.timeout_ms = 10'000;
    options.bearer_token = "s3cr3t";
    options.headers = {{"X-Scope-OrgID", "team-a"}};
    auto client = PrometheusClient::Create(server.url() + "/prefix", options);
    ASSERT_TRUE(client.ok()) << client.status().message();
    ASSERT_TRUE(client.value()->QueryRange("up", kT0, kT0 + 60'000, 60'000).ok());
    const std::string request = server.request();
    EXPECT_EQ(request.rfind("GET /prefix/api/v1/query_range?query=up&", 0), 0u) << request;
    EXPECT_NE(request.find("\r\nAuthorization: Bearer s3cr3t\r\n"), std::string::npos) << request;
    EXPECT_NE(request.find("\r\nX-Scope-OrgID: team-a\r\n"), std::string::npos) << request;
  }
  {
    HostileServer server(answer, "", 0);
    ClientOptions options;
    options.basic = true;
    options.basic_user = "scorer";
    options.basic_password = "pa:ss";
    auto client = PrometheusClient::Create(server.url(), options);
    ASSERT_TRUE(client.ok());
    ASSERT_TRUE(client.value()->QueryRange("up", kT0, kT0 + 60'000, 60'000).ok());
    // base64("scorer:pa:ss")
    EXPECT_NE(server.request().find("\r\nAuthorization: Basic c2NvcmVyOnBhOnNz\r\n"), std::string::npos)
        << server.request();
  }
  ClientOptions both;
  both.bearer_token = "a";
  both.headers = {{"authorization", "Basic x"}};
  EXPECT_FALSE(PrometheusClient::Create("http://127.0.0.1:9", both).ok());
}

TEST(PrometheusClientTest, AnUnauthorizedAnswerSaysWhichFlagsGiveCredentials) {
  HostileServer server("HTTP/1.1 401 Unauthorized\r\nContent-Length: 13\r\n\r\nUnauthorized\n", "", 0);
  auto client = PrometheusClient::Create(server.url(), 10'000);
  ASSERT_TRUE(client.ok());
  core::Result<RangeAnswer> got = client.value()->QueryRange("up", kT0, kT0 + 60'000, 60'000);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("answered HTTP 401 (unauthorized: check --bearer-token-file"),
            std::string::npos)
      << got.status().message();
}

TEST(PrometheusClientTest, MetricNamesPresentAsksTheLabelValuesOfTheWindow) {
  const std::string json = R"({"status":"success","data":["job:gpu_util:avg"]})";
  HostileServer server("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(json.size()) + "\r\n\r\n" + json, "", 0);
  auto client = PrometheusClient::Create(server.url(), 10'000);
  ASSERT_TRUE(client.ok());
  auto got = client.value()->MetricNamesPresent({"job:gpu_util:avg", "cluster:jobs:sum"}, kT0, kT0 + 3'600'000);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), std::set<std::string>{"job:gpu_util:avg"});
  EXPECT_EQ(server.request().rfind("GET /api/v1/label/__name__/values?match%5B%5D=%7B__name__%3D~%22job%3Agpu_util%3Aavg"
                                   "%7Ccluster%3Ajobs%3Asum%22%7D&start=1688169600&end=1688173201 ",
                                   0),
            0u)
      << server.request();
}

TEST(PrometheusUrlTest, EncodesQueryValues) {
  EXPECT_EQ(UrlEncode("max by (a) (m{k=\"v\"}) > 0"), "max%20by%20%28a%29%20%28m%7Bk%3D%22v%22%7D%29%20%3E%200");
}

}  // namespace
}  // namespace acmetrace::scoring
