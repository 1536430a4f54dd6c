// Range queries against Prometheus (/api/v1/query_range): the interface the scorer uses, the HTTP
// client behind it, and the pieces of it tested without a network (URL, range split, response JSON).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::scoring {

/// One series of a range query's answer: its labels (with __name__ if any) and the evaluation times
/// at which the expression had a value there (an alert expression's element is active whatever its
/// value). Value type.
struct Series {
  Labels labels;
  std::vector<int64_t> ts_ms;  // rising
};

/// Answers range queries. Implementations need not be thread-safe.
class RangeQuerier {
 public:
  virtual ~RangeQuerier() = default;
  /// The expression evaluated at start_ms, start_ms + step_ms, ... up to end_ms (inclusive), as
  /// Prometheus's query_range does; the error says what went wrong, naming the server.
  virtual core::Result<std::vector<Series>> QueryRange(const std::string& expr, int64_t start_ms, int64_t end_ms,
                                                       int64_t step_ms) = 0;
};

/// Prometheus refuses a range query of more than 11,000 points per series.
inline constexpr int64_t kMaxPointsPerQuery = 11'000;

/// A sub-range [start_ms, end_ms] on the step grid of the whole range. Value type.
struct RangeChunk {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
};

/// Splits [start_ms, end_ms] into consecutive chunks of at most max_points evaluation times each,
/// on the grid start_ms + k * step_ms, so that no time is asked twice or skipped.
std::vector<RangeChunk> SplitRange(int64_t start_ms, int64_t end_ms, int64_t step_ms,
                                   int64_t max_points = kMaxPointsPerQuery);

/// Runs query_one over each chunk of SplitRange and joins the answers series by series.
core::Result<std::vector<Series>> QueryInChunks(
    const std::function<core::Result<std::vector<Series>>(const RangeChunk&)>& query_one, int64_t start_ms,
    int64_t end_ms, int64_t step_ms, int64_t max_points = kMaxPointsPerQuery);

/// Parses the JSON of a /api/v1/query_range answer ("status":"success", resultType "matrix"); a
/// "status":"error" answer becomes an error with Prometheus's errorType and error text.
core::Result<std::vector<Series>> ParseQueryRangeResponse(std::string_view body);

/// Where a Prometheus lives: from "http://host:port[/prefix]". Value type.
struct PrometheusUrl {
  std::string host;
  std::string port = "80";
  std::string path_prefix;  // "" or "/prefix" (no trailing slash)
};

/// Parses a Prometheus base URL; only http:// is supported (an error says so for https).
core::Result<PrometheusUrl> ParsePrometheusUrl(std::string_view url);

/// Percent-encodes a query-string value (RFC 3986 unreserved characters kept).
std::string UrlEncode(std::string_view text);

/// The HTTP/1.1 client of /api/v1/query_range (Boost.Beast, one connection per request, a timeout per
/// request). Splits long ranges (SplitRange). Not thread-safe.
class PrometheusClient : public RangeQuerier {
 public:
  /// url as given by the user (kept for messages); timeout_ms bounds each request.
  static core::Result<std::unique_ptr<PrometheusClient>> Create(const std::string& url, int64_t timeout_ms);

  core::Result<std::vector<Series>> QueryRange(const std::string& expr, int64_t start_ms, int64_t end_ms,
                                               int64_t step_ms) override;

  /// GETs path (with query string) and returns the body with the HTTP status; an error when the server
  /// cannot be reached or does not answer HTTP.
  core::Status Get(const std::string& target, int& http_status, std::string& body);

  /// Requests made so far (for the log line and tests of the split).
  int64_t requests() const { return requests_; }

 private:
  PrometheusClient(std::string url, PrometheusUrl parsed, int64_t timeout_ms)
      : url_(std::move(url)), parsed_(std::move(parsed)), timeout_ms_(timeout_ms) {}

  std::string url_;
  PrometheusUrl parsed_;
  int64_t timeout_ms_;
  int64_t requests_ = 0;
};

}  // namespace acmetrace::scoring
