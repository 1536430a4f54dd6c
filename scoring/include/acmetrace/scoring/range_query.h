// Range queries against Prometheus (/api/v1/query_range): the interface the scorer uses, the HTTP
// client behind it, and the pieces of it tested without a network (URL, range split, response JSON).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
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

/// A range query's answer: its series, and the samples left out because their time is no evaluation
/// time (not a number, outside the years 2000-2099, not a whole millisecond, or not after the one
/// before): a real Prometheus sends none. Value type.
struct RangeAnswer {
  std::vector<Series> series;
  int64_t bad_samples = 0;
  std::string first_bad_sample;  // why the first one was left out, one line of bounded size
};

/// Answers range queries. Implementations need not be thread-safe.
class RangeQuerier {
 public:
  virtual ~RangeQuerier() = default;
  /// The expression evaluated at start_ms, start_ms + step_ms, ... up to end_ms (inclusive), as
  /// Prometheus's query_range does; the error says what went wrong, naming the server.
  virtual core::Result<RangeAnswer> QueryRange(const std::string& expr, int64_t start_ms, int64_t end_ms,
                                               int64_t step_ms) = 0;
  /// Which of these metric names have a series in [start_ms, end_ms] (so that a recording rule's
  /// series is not reported missing when it is there). An error when the server cannot say; the
  /// default cannot.
  virtual core::Result<std::set<std::string>> MetricNamesPresent(const std::vector<std::string>& names,
                                                                 int64_t start_ms, int64_t end_ms) {
    (void)names, (void)start_ms, (void)end_ms;
    return core::Status::Error("this querier cannot list series");
  }
};

/// Prometheus refuses a range query of more than 11,000 points per series.
inline constexpr int64_t kMaxPointsPerQuery = 11'000;

/// What one answer may hold. A real answer is bounded by the points asked and its series: these
/// bound each answer's body before it is read, so that a server streaming bytes is cut off there.
/// More series than this in one answer is an error (narrow the expression).
inline constexpr int64_t kMaxSeriesPerAnswer = 10'000;
/// The longest sample a real answer holds, `[1688169600.123,"-1.2345678901234567e+308"],`, rounded up.
inline constexpr int64_t kMaxSampleBytes = 48;
/// A series' `{"metric":{...},"values":[` and `]}`: its labels (the shipped series have under 400 bytes).
inline constexpr int64_t kMaxSeriesHeaderBytes = 2'048;
/// The answer's envelope (`{"status":"success","data":{"resultType":"matrix","result":[`...).
inline constexpr int64_t kAnswerEnvelopeBytes = 4'096;
/// The body of an answer of `points` evaluations per series: the largest a real one can be.
constexpr int64_t AnswerBodyLimit(int64_t points) {
  return kAnswerEnvelopeBytes + kMaxSeriesPerAnswer * (kMaxSeriesHeaderBytes + points * kMaxSampleBytes);
}
/// Evaluations per series one request asks (under Prometheus's 11,000): its answer is then at most
/// AnswerBodyLimit(1,000), about 500 MB, read into memory once (never copied, never grown past it).
inline constexpr int64_t kPointsPerRequest = 1'000;
static_assert(kPointsPerRequest <= kMaxPointsPerQuery);
static_assert(AnswerBodyLimit(kPointsPerRequest) <= (int64_t{512} << 20));
/// Evaluations of one rule over the window (--from to --to at its group's interval): more is refused
/// before any query (at the default 1m interval, 694 days; the trace spans months).
inline constexpr int64_t kMaxEvaluationsPerRule = 1'000'000;
/// Samples one rule's answers may hold together (Prometheus's own --query.max-samples default): more
/// is an error naming the rule, not gigabytes of memory.
inline constexpr int64_t kMaxSamplesPerRule = 50'000'000;

/// A sub-range [start_ms, end_ms] on the step grid of the whole range. Value type.
struct RangeChunk {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
};

/// Splits [start_ms, end_ms] into consecutive chunks of at most max_points evaluation times each,
/// on the grid start_ms + k * step_ms, so that no time is asked twice or skipped.
std::vector<RangeChunk> SplitRange(int64_t start_ms, int64_t end_ms, int64_t step_ms,
                                   int64_t max_points = kMaxPointsPerQuery);

/// Runs query_one over each chunk of SplitRange and joins the answers series by series (and their
/// bad samples); an error once the joined answer holds more than max_samples samples.
core::Result<RangeAnswer> QueryInChunks(const std::function<core::Result<RangeAnswer>(const RangeChunk&)>& query_one,
                                        int64_t start_ms, int64_t end_ms, int64_t step_ms,
                                        int64_t max_points = kMaxPointsPerQuery,
                                        int64_t max_samples = kMaxSamplesPerRule);

/// Parses the JSON of a /api/v1/query_range answer ("status":"success", resultType "matrix"); a
/// "status":"error" answer becomes an error with Prometheus's errorType and error text (cut to a
/// line). A sample whose time is no evaluation time is counted in bad_samples and left out; more
/// than kMaxSeriesPerAnswer series is an error.
core::Result<RangeAnswer> ParseQueryRangeResponse(std::string_view body);

/// Where a Prometheus lives: from "http://host:port[/prefix]" or "https://...". Value type.
struct PrometheusUrl {
  std::string scheme = "http";
  std::string host;
  std::string port = "80";  // 443 for https
  std::string path_prefix;  // "" or "/prefix" (no trailing slash)
  bool ipv6 = false;        // host written in brackets
  /// "scheme://host:port/prefix": what request paths are appended to.
  std::string Base() const;
};

/// Parses a Prometheus base URL: http:// or https://, no user info (credentials come from files).
core::Result<PrometheusUrl> ParsePrometheusUrl(std::string_view url);

/// A user and password for HTTP basic authentication. Value type; never printed.
struct BasicAuth {
  std::string user;
  std::string password;
};

/// How the client reaches the server beyond its URL: timeout, TLS trust and credentials. Value type;
/// the secrets are never put in a message.
struct ClientOptions {
  int64_t timeout_ms = 60'000;  // each request, connection to the last byte
  std::string ca_file;          // PEM certificates that sign an https server's (empty: the system's)
  std::string bearer_token;     // Authorization: Bearer TOKEN
  bool basic = false;           // basic authentication with basic_user, basic_password
  std::string basic_user;
  std::string basic_password;
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request (tenant headers)
};

/// --bearer-token-file: the token, one line of a regular file of at most 64 KiB (a final line break
/// dropped). Errors name the flag and file ("missing", "empty", ...), never the content.
core::Result<std::string> ReadBearerTokenFile(const std::string& path);
/// --basic-auth-file: one line "user:password" (the password may hold ':'), as ReadBearerTokenFile.
core::Result<BasicAuth> ReadBasicAuthFile(const std::string& path);
/// --header 'Name: value': an HTTP header name (token characters), a value without control
/// characters, spaces around it trimmed; Host, Content-Length, Transfer-Encoding and Connection
/// are refused. Errors name the header, never its value.
core::Result<std::pair<std::string, std::string>> ParseHeaderFlag(std::string_view text);

/// Percent-encodes a query-string value (RFC 3986 unreserved characters kept).
std::string UrlEncode(std::string_view text);

/// The HTTP(S) client of /api/v1/query_range (libcurl, one connection per request, a timeout per
/// request, redirects not followed). Splits long ranges (SplitRange). Not thread-safe.
class PrometheusClient : public RangeQuerier {
 public:
  /// url as given by the user (kept for messages); timeout_ms bounds each request.
  static core::Result<std::unique_ptr<PrometheusClient>> Create(const std::string& url, int64_t timeout_ms);
  /// The same with TLS trust and credentials; more than one credential (bearer, basic, an
  /// Authorization header) is an error.
  static core::Result<std::unique_ptr<PrometheusClient>> Create(const std::string& url, ClientOptions options);

  /// Asks kPointsPerRequest evaluations per request at most, each answer's body bounded by
  /// AnswerBodyLimit of the points it asked.
  core::Result<RangeAnswer> QueryRange(const std::string& expr, int64_t start_ms, int64_t end_ms,
                                       int64_t step_ms) override;

  /// One request to /api/v1/label/__name__/values with a match[] of the names (Prometheus and
  /// VictoriaMetrics both answer it), over the window.
  core::Result<std::set<std::string>> MetricNamesPresent(const std::vector<std::string>& names, int64_t start_ms,
                                                         int64_t end_ms) override;

  /// GETs path (with query string) and returns the body with the HTTP status; an error when the server
  /// cannot be reached, does not answer HTTP, or sends a body longer than max_body_bytes (the body
  /// never holds more than that: it is not grown by doubling past it).
  core::Status Get(const std::string& target, int& http_status, std::string& body,
                   int64_t max_body_bytes = int64_t{16} << 20);

  /// What Post sends: the body and its headers (Content-Type and the like). Value type.
  struct PostBody {
    std::string_view content;
    std::vector<std::string> headers;  // "Name: value" lines, besides the client's own
    std::string* retry_after = nullptr;  // if set: the answer's Retry-After value ("" without one)
  };
  /// POSTs content to target (appended to the URL, "" for the URL itself) with the client's
  /// credentials and headers; the answer as Get's.
  core::Status Post(const std::string& target, const PostBody& post, int& http_status, std::string& body,
                    int64_t max_body_bytes = int64_t{1} << 20);

  /// Requests made so far (for the log line and tests of the split).
  int64_t requests() const { return requests_; }

 private:
  PrometheusClient(std::string url, PrometheusUrl parsed, ClientOptions options)
      : url_(std::move(url)), parsed_(std::move(parsed)), options_(std::move(options)) {}

  // Get into a buffer with simdjson's padding after the bytes (parsed where it lies, not copied).
  core::Status Fetch(const std::string& target, int& http_status, std::vector<char>& body, int64_t max_body_bytes,
                     const PostBody* post = nullptr);

  std::string url_;
  PrometheusUrl parsed_;
  ClientOptions options_;
  int64_t requests_ = 0;
};

}  // namespace acmetrace::scoring
