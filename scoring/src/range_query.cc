// /api/v1/query_range over HTTP (Boost.Beast), split to Prometheus's point limit, parsed with
// simdjson On-Demand.
#include "acmetrace/scoring/range_query.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <simdjson.h>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::scoring {

std::vector<RangeChunk> SplitRange(int64_t start_ms, int64_t end_ms, int64_t step_ms, int64_t max_points) {
  std::vector<RangeChunk> chunks;
  if (step_ms <= 0 || end_ms < start_ms || max_points <= 0) return chunks;
  const int64_t points = (end_ms - start_ms) / step_ms + 1;
  for (int64_t first = 0; first < points; first += max_points) {
    const int64_t last = std::min(points - 1, first + max_points - 1);
    chunks.push_back({start_ms + first * step_ms, start_ms + last * step_ms});
  }
  return chunks;
}

core::Result<RangeAnswer> QueryInChunks(const std::function<core::Result<RangeAnswer>(const RangeChunk&)>& query_one,
                                        int64_t start_ms, int64_t end_ms, int64_t step_ms, int64_t max_points,
                                        int64_t max_samples) {
  RangeAnswer joined;
  std::map<Labels, size_t> index;
  int64_t samples = 0;
  for (const RangeChunk& chunk : SplitRange(start_ms, end_ms, step_ms, max_points)) {
    core::Result<RangeAnswer> part = query_one(chunk);
    if (!part.ok()) return part.status();
    RangeAnswer& answer = part.value();
    if (joined.bad_samples == 0) joined.first_bad_sample = answer.first_bad_sample;
    joined.bad_samples += answer.bad_samples;
    for (Series& s : answer.series) {
      samples += static_cast<int64_t>(s.ts_ms.size());
      if (samples > max_samples) {
        return core::Status::Error("the answers hold more than " + std::to_string(max_samples) +
                                   " samples: narrow the window (--from, --to) or the expression");
      }
      auto [it, added] = index.try_emplace(s.labels, joined.series.size());
      if (added) {
        joined.series.push_back(std::move(s));
      } else {
        std::vector<int64_t>& ts = joined.series[it->second].ts_ms;
        ts.insert(ts.end(), s.ts_ms.begin(), s.ts_ms.end());
      }
    }
  }
  return joined;
}

namespace {

// Text of the answer in a message: one line, cut (core::QuotedValue).
std::string Echo(std::string_view text) { return core::QuotedValue(text); }
// The same without the quotes, for a message of the server's.
std::string Cut(std::string_view text) {
  const std::string quoted = core::QuotedValue(text);
  const size_t close = quoted.rfind('\'');
  return quoted.substr(1, close - 1) + quoted.substr(close + 1);
}

// A sample's time in milliseconds, or why it is none: Prometheus writes evaluation times as seconds
// with up to three decimals (1688169600, 1688169600.5). Checked before any conversion to an integer,
// which is undefined for 1e308.
std::optional<int64_t> SampleTimeMs(std::string_view token, std::string& why) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t')) {
    token.remove_suffix(1);
  }
  const std::optional<double> seconds = core::ParseJsonNumber(token);
  if (!seconds) {
    why = "time " + Echo(token) + " is not a number";
    return std::nullopt;
  }
  const double ms = *seconds * 1000.0;
  if (!(ms >= static_cast<double>(core::kMinTraceTimeMs) && ms < static_cast<double>(core::kMaxTraceTimeMs))) {
    why = "time " + Echo(token) + " is " + std::string(core::kTraceTimeRangeReason);
    return std::nullopt;
  }
  const double whole = std::nearbyint(ms);
  // A double holds these milliseconds to about 0.0002 ms: more off is no millisecond.
  if (std::fabs(ms - whole) > 0.01) {
    why = "time " + Echo(token) + " is not a whole millisecond";
    return std::nullopt;
  }
  return static_cast<int64_t>(whole);
}

core::Result<RangeAnswer> ParsePadded(simdjson::padded_string_view padded) {
  namespace od = simdjson::ondemand;
  const std::string_view body = padded;
  od::parser parser;
  od::document doc;
  od::object root;
  auto not_json = [&] { return core::Status::Error("the answer is not JSON: " + Echo(body)); };
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS || doc.get_object().get(root) != simdjson::SUCCESS) {
    return not_json();
  }
  std::string_view status;
  if (root.find_field_unordered("status").get_string().get(status) != simdjson::SUCCESS) {
    return core::Status::Error("the answer has no \"status\"");
  }
  if (status == "error") {
    std::string_view type = "?", message = "no message";
    // After an error other than a missing field or a wrong type the document may not be read further
    // (simdjson On-Demand: its parser is gone), so a broken answer stops at its first broken field.
    auto usable = [](simdjson::error_code e) {
      return e == simdjson::SUCCESS || e == simdjson::NO_SUCH_FIELD || e == simdjson::INCORRECT_TYPE;
    };
    std::string_view found;
    const simdjson::error_code type_error = root.find_field_unordered("errorType").get_string().get(found);
    if (type_error == simdjson::SUCCESS) type = found;
    if (!usable(type_error)) return core::Status::Error("Prometheus answered an error, in broken JSON");
    const simdjson::error_code message_error = root.find_field_unordered("error").get_string().get(found);
    if (message_error == simdjson::SUCCESS) message = found;
    if (!usable(message_error)) return core::Status::Error("Prometheus answered an error, in broken JSON");
    // Both cut to a line: a server may send megabytes there.
    return core::Status::Error("Prometheus answered an error (" + Cut(type) + "): " + Cut(message));
  }
  if (status != "success") return core::Status::Error("the answer has no \"status\":\"success\"");
  const core::Status not_matrix =
      core::Status::Error("the answer is not a range-query matrix (data.resultType \"matrix\")");
  od::object data;
  std::string_view result_type;
  od::array result;
  if (root.find_field_unordered("data").get_object().get(data) != simdjson::SUCCESS ||
      data.find_field_unordered("resultType").get_string().get(result_type) != simdjson::SUCCESS ||
      result_type != "matrix" || data.find_field_unordered("result").get_array().get(result) != simdjson::SUCCESS) {
    return not_matrix;
  }
  const core::Status bad_sample = core::Status::Error("a sample of the answer is not [time, \"value\"]");
  RangeAnswer out;
  auto left_out = [&out](const std::string& why) {
    if (out.bad_samples++ == 0) out.first_bad_sample = why;
  };
  for (auto item_result : result) {
    if (static_cast<int64_t>(out.series.size()) >= kMaxSeriesPerAnswer) {
      return core::Status::Error("the answer has more than " + std::to_string(kMaxSeriesPerAnswer) +
                                 " series: narrow the expression");
    }
    od::object item;
    if (item_result.get_object().get(item) != simdjson::SUCCESS) return not_matrix;
    Series s;
    for (auto field : item) {
      std::string_view key;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) return not_matrix;
      if (key == "metric") {
        od::object metric;
        if (field.value().get_object().get(metric) != simdjson::SUCCESS) return not_matrix;
        for (auto label : metric) {
          std::string_view name, value;
          if (label.unescaped_key().get(name) != simdjson::SUCCESS ||
              label.value().get_string().get(value) != simdjson::SUCCESS) {
            return not_matrix;
          }
          s.labels.emplace(std::string(name), std::string(value));
        }
      } else if (key == "values") {
        od::array values;
        if (field.value().get_array().get(values) != simdjson::SUCCESS) return not_matrix;
        for (auto point_result : values) {
          od::array point;
          if (point_result.get_array().get(point) != simdjson::SUCCESS) return bad_sample;
          auto first = point.begin();
          std::string_view token;
          if (first.error() != simdjson::SUCCESS || first.value() == point.end().value() ||
              (*first.value()).raw_json_token().get(token) != simdjson::SUCCESS) {
            return bad_sample;
          }
          std::string why;
          const std::optional<int64_t> ts = SampleTimeMs(token, why);
          if (!ts) {
            left_out(why);
          } else if (!s.ts_ms.empty() && *ts <= s.ts_ms.back()) {
            left_out("time " + Echo(token) + " is not after the sample before it");
          } else {
            s.ts_ms.push_back(*ts);
          }
        }
      }
    }
    out.series.push_back(std::move(s));
  }
  return out;
}

}  // namespace

core::Result<RangeAnswer> ParseQueryRangeResponse(std::string_view body) {
  const simdjson::padded_string padded(body);
  return ParsePadded(padded);
}

core::Result<PrometheusUrl> ParsePrometheusUrl(std::string_view url) {
  const std::string text(url);
  auto bad = [&](const std::string& why) {
    return core::Status::Error("--prometheus: \"" + text + "\": " + why + " (expected http://HOST:PORT)");
  };
  if (url.rfind("https://", 0) == 0) return bad("https is not supported");
  if (url.rfind("http://", 0) != 0) return bad("not an http:// URL");
  std::string_view rest = url.substr(7);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  PrometheusUrl out;
  if (slash != std::string_view::npos) {
    out.path_prefix = std::string(rest.substr(slash));
    while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
    if (out.path_prefix.find_first_of("?#") != std::string::npos) return bad("no query or fragment allowed");
  }
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported");
  if (authority.empty()) return bad("no host");
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed [ in the host");
    out.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (!authority.empty()) {
      if (authority.front() != ':') return bad("junk after the host");
      out.port = std::string(authority.substr(1));
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) out.port = std::string(authority.substr(colon + 1));
  }
  if (out.host.empty()) return bad("no host");
  if (out.port.empty() || out.port.size() > 5 || out.port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(out.port) == 0 || std::stoi(out.port) > 65535) {
    return bad("the port is not a number in 1-65535");
  }
  return out;
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

core::Result<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(const std::string& url, int64_t timeout_ms) {
  core::Result<PrometheusUrl> parsed = ParsePrometheusUrl(url);
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<PrometheusClient>(new PrometheusClient(url, std::move(parsed).value(), timeout_ms));
}

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

// A response body that never holds more than its limit, with simdjson's padding after the bytes.
// Beast's string_body grows by std::string's doubling (and std::string::reserve rounds up to double
// as well), so a body just over half its limit could take twice the limit; a vector's reserve is
// exact, and growth here doubles only up to the limit.
struct BoundedBody {
  struct value_type {
    std::vector<char> bytes;  // capacity >= size + SIMDJSON_PADDING once read
    uint64_t limit = 0;
  };
  static std::uint64_t size(const value_type& body) { return body.bytes.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      ec = {};
      if (length && *length > body_.limit) {
        ec = http::error::body_limit;
        return;
      }
      if (length) body_.bytes.reserve(*length + simdjson::SIMDJSON_PADDING);
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      const size_t extra = net::buffer_size(buffers);
      const size_t size = body_.bytes.size();
      if (extra > body_.limit - size) {  // the parser checks too; this keeps the buffer within it
        ec = http::error::body_limit;
        return 0;
      }
      if (size + extra + simdjson::SIMDJSON_PADDING > body_.bytes.capacity()) {
        const size_t doubled = std::max(2 * body_.bytes.capacity(), size + extra);
        body_.bytes.reserve(std::min<size_t>(doubled, body_.limit) + simdjson::SIMDJSON_PADDING);
      }
      body_.bytes.resize(size + extra);
      net::buffer_copy(net::buffer(body_.bytes.data() + size, extra), buffers);
      return extra;
    }

    void finish(beast::error_code& ec) {
      ec = {};
      if (body_.bytes.capacity() < body_.bytes.size() + simdjson::SIMDJSON_PADDING) {
        body_.bytes.reserve(body_.bytes.size() + simdjson::SIMDJSON_PADDING);
      }
    }

   private:
    value_type& body_;
  };
};

}  // namespace

core::Status PrometheusClient::Fetch(const std::string& target, int& http_status, std::vector<char>& body,
                                     int64_t max_body_bytes) {
  ++requests_;
  net::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  auto fail = [&](const char* what) {
    return core::Status::Error("cannot query Prometheus at " + url_ + ": " + what + ": " + ec.message());
  };
  net::ip::tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(parsed_.host, parsed_.port, ec);
  if (ec) return fail("resolving the host");
  // tcp_stream's deadline applies to asynchronous operations only: each step is started and run to
  // completion (or to the deadline, which closes the socket) before the next.
  auto run = [&io] {
    io.restart();
    io.run();
  };
  stream.expires_after(std::chrono::milliseconds(timeout_ms_));
  stream.async_connect(endpoints, [&ec](beast::error_code e, const net::ip::tcp::endpoint&) { ec = e; });
  run();
  if (ec) return fail("connecting");
  http::request<http::empty_body> request{http::verb::get, parsed_.path_prefix + target, 11};
  request.set(http::field::host, parsed_.host);
  request.set(http::field::user_agent, "acmetrace-score");
  request.set(http::field::accept, "application/json");
  stream.expires_after(std::chrono::milliseconds(timeout_ms_));
  http::async_write(stream, request, [&ec](beast::error_code e, size_t) { ec = e; });
  run();
  if (ec) return fail("sending the request");
  beast::flat_buffer buffer(64 * 1024);  // the header and what is read ahead: bounded, never doubled
  http::response_parser<BoundedBody> parser;
  parser.body_limit(static_cast<std::uint64_t>(max_body_bytes));
  parser.get().body().limit = static_cast<uint64_t>(max_body_bytes);
  stream.expires_after(std::chrono::milliseconds(timeout_ms_));
  http::async_read(stream, buffer, parser, [&ec](beast::error_code e, size_t) { ec = e; });
  run();
  if (ec == http::error::body_limit) {
    return core::Status::Error("cannot query Prometheus at " + url_ + ": the answer is longer than " +
                               std::to_string(max_body_bytes) + " bytes, more than a real one can be");
  }
  if (ec) return fail("reading the answer");
  http_status = static_cast<int>(parser.get().result_int());
  body = std::move(parser.get().body().bytes);
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  return core::Status::Ok();
}

core::Status PrometheusClient::Get(const std::string& target, int& http_status, std::string& body,
                                   int64_t max_body_bytes) {
  std::vector<char> bytes;
  if (core::Status s = Fetch(target, http_status, bytes, max_body_bytes); !s.ok()) return s;
  body.assign(bytes.data(), bytes.size());
  return core::Status::Ok();
}

core::Result<RangeAnswer> PrometheusClient::QueryRange(const std::string& expr, int64_t start_ms, int64_t end_ms,
                                                       int64_t step_ms) {
  auto seconds = [](int64_t ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ms / 1000), static_cast<long long>(ms % 1000));
    return std::string(buf);
  };
  auto one = [&](const RangeChunk& chunk) -> core::Result<RangeAnswer> {
    const std::string target = "/api/v1/query_range?query=" + UrlEncode(expr) + "&start=" + seconds(chunk.start_ms) +
                               "&end=" + seconds(chunk.end_ms) + "&step=" + seconds(step_ms);
    int status = 0;
    std::vector<char> body;
    const int64_t points = (chunk.end_ms - chunk.start_ms) / step_ms + 1;
    if (core::Status s = Fetch(target, status, body, AnswerBodyLimit(points)); !s.ok()) return s;
    core::Result<RangeAnswer> parsed =
        ParsePadded(simdjson::padded_string_view(body.data(), body.size(), body.capacity()));
    if (!parsed.ok()) {
      return core::Status::Error("Prometheus at " + url_ + " (HTTP " + std::to_string(status) +
                                 "): " + parsed.status().message());
    }
    if (status != 200) {
      return core::Status::Error("Prometheus at " + url_ + " answered HTTP " + std::to_string(status));
    }
    return parsed;
  };
  return QueryInChunks(one, start_ms, end_ms, step_ms, kPointsPerRequest);
}

}  // namespace acmetrace::scoring
