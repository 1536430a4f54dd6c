// /api/v1/query_range over HTTP or HTTPS (libcurl), split to Prometheus's point limit, parsed with
// simdjson On-Demand.
#include "acmetrace/scoring/range_query.h"

#include <curl/curl.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
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
    return core::Status::Error("--prometheus: \"" + text + "\": " + why + " (expected http://HOST:PORT or https://...)");
  };
  PrometheusUrl out;
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) {
    out.scheme = "https";
    out.port = "443";
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return bad("not an http:// or https:// URL");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.path_prefix = std::string(rest.substr(slash));
    while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
    if (out.path_prefix.find_first_of("?#") != std::string::npos) return bad("no query or fragment allowed");
    for (unsigned char c : out.path_prefix) {
      if (c <= 0x20 || c >= 0x7f) return bad("a space or control character in the path");
    }
  }
  // Credentials in a URL end up in logs and process lists: they come from files (--basic-auth-file).
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported (use --basic-auth-file)");
  if (authority.empty()) return bad("no host");
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed [ in the host");
    out.host = std::string(authority.substr(1, close - 1));
    out.ipv6 = true;
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
  for (unsigned char c : out.host) {
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '\\' || c == '%') return bad("not a host name");
  }
  if (out.port.empty() || out.port.size() > 5 || out.port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(out.port) == 0 || std::stoi(out.port) > 65535) {
    return bad("the port is not a number in 1-65535");
  }
  return out;
}

std::string PrometheusUrl::Base() const {
  return scheme + "://" + (ipv6 ? "[" + host + "]" : host) + ":" + port + path_prefix;
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

namespace {

// A file of a secret or a setting, read whole: a regular file of at most 64 KiB. The error names the
// flag and the file, never the content.
core::Result<std::string> ReadSmallFile(const std::string& flag, const std::string& path) {
  auto refused = [&](const std::string& why) { return core::Status::Error(flag + ": " + path + ": " + why); };
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return refused(std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};
  struct stat st {};
  if (::fstat(::fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) return refused("not a regular file");
  constexpr size_t kMax = 64 * 1024;
  std::string text(kMax + 1, '\0');
  const size_t n = std::fread(text.data(), 1, text.size(), file);
  if (std::ferror(file)) return refused(std::string("cannot read: ") + std::strerror(errno));
  if (n > kMax) return refused("longer than 65536 bytes");
  text.resize(n);
  // One line: a final line break (an editor's) is not part of the secret.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return refused("empty");
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return refused("holds a line break or control character (one line expected)");
  }
  return text;
}

bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

}  // namespace

core::Result<std::string> ReadBearerTokenFile(const std::string& path) {
  core::Result<std::string> token = ReadSmallFile("--bearer-token-file", path);
  if (!token.ok()) return token.status();
  for (unsigned char c : token.value()) {
    if (c == ' ' || c >= 0x80) {
      return core::Status::Error("--bearer-token-file: " + path + ": a space or non-ASCII byte in the token");
    }
  }
  return token;
}

core::Result<BasicAuth> ReadBasicAuthFile(const std::string& path) {
  core::Result<std::string> text = ReadSmallFile("--basic-auth-file", path);
  if (!text.ok()) return text.status();
  const size_t colon = text.value().find(':');
  if (colon == std::string::npos || colon == 0) {
    return core::Status::Error("--basic-auth-file: " + path + ": expected one line user:password");
  }
  return BasicAuth{text.value().substr(0, colon), text.value().substr(colon + 1)};
}

core::Result<std::pair<std::string, std::string>> ParseHeaderFlag(std::string_view text) {
  const size_t colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  // The value may be a secret (a tenant's key): messages name the header, never its value.
  auto refused = [&](const std::string& why) {
    return core::Status::Error("--header: " + why + " (expected 'Name: value', e.g. 'X-Scope-OrgID: team-a')");
  };
  if (colon == std::string_view::npos) return refused("no ':' in " + core::QuotedValue(name));
  if (name.empty()) return refused("no header name");
  for (unsigned char c : name) {
    if (!IsTokenChar(c)) return refused("the name " + core::QuotedValue(name) + " is not an HTTP header name");
  }
  std::string_view value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return refused("the value of " + std::string(name) + " holds a control character");
    }
  }
  if (value.empty()) return refused("the value of " + std::string(name) + " is empty");
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // These the client sets itself: a second one would make the request ambiguous.
  for (const char* own : {"host", "content-length", "transfer-encoding", "connection"}) {
    if (lower == own) return refused(std::string(name) + " is set by the client, not by --header");
  }
  return std::pair{std::string(name), std::string(value)};
}

core::Result<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(const std::string& url, int64_t timeout_ms) {
  ClientOptions options;
  options.timeout_ms = timeout_ms;
  return Create(url, std::move(options));
}

core::Result<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(const std::string& url,
                                                                         ClientOptions options) {
  core::Result<PrometheusUrl> parsed = ParsePrometheusUrl(url);
  if (!parsed.ok()) return parsed.status();
  bool authorization_header = false;
  for (const auto& [name, value] : options.headers) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    authorization_header = authorization_header || lower == "authorization";
  }
  const int credentials = (options.bearer_token.empty() ? 0 : 1) + (options.basic ? 1 : 0) + (authorization_header ? 1 : 0);
  if (credentials > 1) {
    return core::Status::Error(
        "give one of --bearer-token-file, --basic-auth-file and --header 'Authorization: ...', not several");
  }
  static std::once_flag curl_initialized;
  std::call_once(curl_initialized, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::unique_ptr<PrometheusClient>(new PrometheusClient(url, std::move(parsed).value(), std::move(options)));
}

namespace {

// What the body callback writes into: never more than its limit, with simdjson's padding after the
// bytes. std::vector's reserve is exact, and growth here doubles only up to the limit, so a body
// just over half its limit cannot take twice the limit.
struct BoundedBody {
  std::vector<char>* bytes = nullptr;  // capacity >= size + SIMDJSON_PADDING once read
  size_t limit = 0;
  bool over = false;
};

// One header line of the answer: keeps Retry-After's value (the last answer's, after a 100 Continue).
size_t KeepRetryAfter(char* data, size_t size, size_t count, void* user) {
  const size_t n = size * count;
  std::string_view line(data, n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    bool same = true;
    for (size_t i = 0; i < kName.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    }
    if (same) {
      line.remove_prefix(kName.size());
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
      static_cast<std::string*>(user)->assign(line.substr(0, 64));
    }
  }
  return n;
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<BoundedBody*>(user);
  const size_t extra = size * count;
  std::vector<char>& bytes = *body->bytes;
  const size_t have = bytes.size();
  if (extra > body->limit - have) {
    body->over = true;
    return 0;  // libcurl ends the transfer (CURLE_WRITE_ERROR)
  }
  if (have + extra + simdjson::SIMDJSON_PADDING > bytes.capacity()) {
    const size_t doubled = std::max(2 * bytes.capacity(), have + extra);
    bytes.reserve(std::min(doubled, body->limit) + simdjson::SIMDJSON_PADDING);
  }
  bytes.insert(bytes.end(), data, data + extra);
  return extra;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

core::Status PrometheusClient::Fetch(const std::string& target, int& http_status, std::vector<char>& body,
                                     int64_t max_body_bytes, const PostBody* post) {
  ++requests_;
  const std::string cannot = (post == nullptr ? "cannot query Prometheus at " : "cannot write to ") + url_;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return core::Status::Error(cannot + ": libcurl could not start");
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add_header = [&](const std::string& line) {
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (grown != nullptr) {
      (void)headers.release();
      headers.reset(grown);
    }
  };
  if (post == nullptr) {
    add_header("Accept: application/json");
  } else {
    for (const std::string& line : post->headers) add_header(line);
  }
  if (!options_.bearer_token.empty()) add_header("Authorization: Bearer " + options_.bearer_token);
  for (const auto& [name, value] : options_.headers) add_header(name + ": " + value);
  const std::string full = parsed_.Base() + target;
  char error[CURL_ERROR_SIZE] = {0};
  BoundedBody sink{&body, static_cast<size_t>(max_body_bytes), false};
  body.clear();
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, full.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect elsewhere would carry the credentials
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_ms));
  curl_easy_setopt(c, CURLOPT_USERAGENT, post == nullptr ? "acmetrace-score" : "acmetrace-remote-write");
  if (post != nullptr) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post->content.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post->content.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_body_bytes));
  if (post != nullptr && post->retry_after != nullptr) {
    post->retry_after->clear();
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &KeepRetryAfter);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, post->retry_after);
  }
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (options_.basic) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(c, CURLOPT_USERNAME, options_.basic_user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, options_.basic_password.c_str());
  }
  const CURLcode code = curl_easy_perform(c);
  if (sink.over || code == CURLE_FILESIZE_EXCEEDED) {
    body.clear();
    return core::Status::Error(cannot + ": the answer is longer than " +
                               std::to_string(max_body_bytes) + " bytes, more than a real one can be");
  }
  if (code != CURLE_OK) {
    // libcurl's own words (they name no credential), cut to a line.
    std::string why = error[0] != '\0' ? error : curl_easy_strerror(code);
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    body.clear();
    return core::Status::Error(cannot + ": " + why);
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  http_status = static_cast<int>(status);
  if (body.capacity() < body.size() + simdjson::SIMDJSON_PADDING) body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  return core::Status::Ok();
}

core::Status PrometheusClient::Post(const std::string& target, const PostBody& post, int& http_status,
                                    std::string& body, int64_t max_body_bytes) {
  std::vector<char> bytes;
  if (core::Status s = Fetch(target, http_status, bytes, max_body_bytes, &post); !s.ok()) return s;
  body.assign(bytes.data(), bytes.size());
  return core::Status::Ok();
}

core::Status PrometheusClient::Get(const std::string& target, int& http_status, std::string& body,
                                   int64_t max_body_bytes) {
  std::vector<char> bytes;
  if (core::Status s = Fetch(target, http_status, bytes, max_body_bytes); !s.ok()) return s;
  body.assign(bytes.data(), bytes.size());
  return core::Status::Ok();
}

core::Result<std::set<std::string>> PrometheusClient::MetricNamesPresent(const std::vector<std::string>& names,
                                                                         int64_t start_ms, int64_t end_ms) {
  std::string selector;
  for (const std::string& name : names) {
    // Recording rule names are metric names ([a-zA-Z_:][a-zA-Z0-9_:]*): no regex character to escape.
    selector += (selector.empty() ? "" : "|") + name;
  }
  const std::string target = "/api/v1/label/__name__/values?match%5B%5D=" + UrlEncode("{__name__=~\"" + selector + "\"}") +
                             "&start=" + std::to_string(start_ms / 1000) + "&end=" + std::to_string(end_ms / 1000 + 1);
  int status = 0;
  std::string body;
  if (core::Status s = Get(target, status, body, int64_t{4} << 20); !s.ok()) return s;
  if (status != 200) return core::Status::Error("Prometheus at " + url_ + " answered HTTP " + std::to_string(status));
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(body);
  std::set<std::string> present;
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return core::Status::Error("Prometheus at " + url_ + ": not JSON");
  simdjson::ondemand::array data;
  if (doc["data"].get_array().get(data)) {
    return core::Status::Error("Prometheus at " + url_ + ": no \"data\" array in the label values answer");
  }
  for (auto value : data) {
    std::string_view name;
    if (value.get_string().get(name)) return core::Status::Error("Prometheus at " + url_ + ": a label value not a string");
    present.emplace(name);
  }
  return present;
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
    if (status == 401 || status == 403) {
      return core::Status::Error("Prometheus at " + url_ + " answered HTTP " + std::to_string(status) +
                                 (status == 401 ? " (unauthorized" : " (forbidden") +
                                 ": check --bearer-token-file, --basic-auth-file or --header)");
    }
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
