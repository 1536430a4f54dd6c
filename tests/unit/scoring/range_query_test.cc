// The parts of the query_range client that need no network: the split at 11,000 points, joining the
// chunks, the answer's JSON, the URL.
#include "acmetrace/scoring/range_query.h"

#include <gtest/gtest.h>

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
  auto one = [&](const RangeChunk& c) -> core::Result<std::vector<Series>> {
    ++calls;
    std::vector<Series> out;
    out.push_back({{{"gpu", "0"}}, {c.start_ms}});
    if (calls == 2) out.push_back({{{"gpu", "1"}}, {c.end_ms}});
    return out;
  };
  core::Result<std::vector<Series>> got = QueryInChunks(one, kT0, kT0 + 20 * 60'000, 60'000, 10);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(calls, 3);  // 21 points, 10 per chunk
  ASSERT_EQ(got.value().size(), 2u);
  EXPECT_EQ(got.value()[0].ts_ms, (std::vector<int64_t>{kT0, kT0 + 10 * 60'000, kT0 + 20 * 60'000}));
  EXPECT_EQ(got.value()[1].labels.at("gpu"), "1");
  // A failing chunk fails the query.
  auto failing = [&](const RangeChunk&) -> core::Result<std::vector<Series>> { return core::Status::Error("down"); };
  EXPECT_EQ(QueryInChunks(failing, kT0, kT0 + 60'000, 60'000).status().message(), "down");
}

TEST(QueryRangeResponseTest, ParsesAMatrix) {
  core::Result<std::vector<Series>> got = ParseQueryRangeResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"cluster":"seren","kind":"gpu_overheat"},"values":[[1688169600,"1"],[1688169660.5,"NaN"]]},)"
      R"({"metric":{},"values":[]}]}})");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 2u);
  EXPECT_EQ(got.value()[0].labels.at("kind"), "gpu_overheat");
  EXPECT_EQ(got.value()[0].ts_ms, (std::vector<int64_t>{kT0, kT0 + 60'500}));
}

TEST(QueryRangeResponseTest, ErrorsSayWhatPrometheusSaid) {
  core::Result<std::vector<Series>> got = ParseQueryRangeResponse(
      R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected <op:>>"})");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "Prometheus answered an error (bad_data): 1:5: parse error: unexpected <op:>>");
  EXPECT_FALSE(ParseQueryRangeResponse("<html>502 Bad Gateway</html>").ok());
  EXPECT_FALSE(ParseQueryRangeResponse(R"({"status":"success","data":{"resultType":"vector","result":[]}})").ok());
  EXPECT_FALSE(ParseQueryRangeResponse(R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[["x"]]}]}})").ok());
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
  for (const char* bad : {"127.0.0.1:9090", "https://prom:9090", "http://", "http://:9090", "http://h:port",
                          "http://h:99999", "http://h:0", "http://u@h:9090", "http://h:9090/?q=1", "http://[::1"}) {
    core::Result<PrometheusUrl> url = ParsePrometheusUrl(bad);
    ASSERT_FALSE(url.ok()) << bad;
    EXPECT_EQ(url.status().message().rfind("--prometheus: \"" + std::string(bad) + "\": ", 0), 0u)
        << url.status().message();
  }
}

TEST(PrometheusUrlTest, HttpsIsRefusedBySaying) {
  EXPECT_NE(ParsePrometheusUrl("https://prom:9090").status().message().find("https is not supported"),
            std::string::npos);
}

TEST(PrometheusUrlTest, EncodesQueryValues) {
  EXPECT_EQ(UrlEncode("max by (a) (m{k=\"v\"}) > 0"), "max%20by%20%28a%29%20%28m%7Bk%3D%22v%22%7D%29%20%3E%200");
}

}  // namespace
}  // namespace acmetrace::scoring
