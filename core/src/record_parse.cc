// Record parsing with simdjson On-Demand: the processors read every replayed record, so parsing is
// the hot path (bench/process_throughput.sh holds it against kcat).
#include "acmetrace/core/record_parse.h"

#include <simdjson.h>

#include <cstring>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::core {

namespace od = simdjson::ondemand;

RecordKind RecordKindOfTopic(std::string_view topic) {
  if (topic == kTopicUtil) return RecordKind::kUtil;
  if (topic == kTopicJobs) return RecordKind::kJob;
  if (topic == kTopicPower) return RecordKind::kPower;
  if (topic == kTopicMetrics) return RecordKind::kMetrics;
  if (topic == kTopicAnomalies) return RecordKind::kAnomaly;
  return RecordKind::kUnknown;
}

namespace {

Status FieldError(std::string_view field, simdjson::error_code error) {
  std::string m = "field \"";
  m += field;
  m += "\": ";
  m += simdjson::error_message(error);
  return Status::Error(std::move(m));
}

Status Missing(std::string_view field) {
  std::string m = "missing field \"";
  m += field;
  m += "\"";
  return Status::Error(std::move(m));
}

// An event time: an integer in the trace time range (core::IsTraceTimeMs); one far outside would
// make the stages step through decades of event time.
Status GetTraceTime(od::value v, std::string_view field, int64_t& out) {
  int64_t ts;
  if (auto e = v.get_int64().get(ts); e) return FieldError(field, e);
  if (!IsTraceTimeMs(ts)) {
    return Status::Error("field \"" + std::string(field) + "\": " + std::string(kTraceTimeRangeReason) + ": " +
                         std::to_string(ts));
  }
  out = ts;
  return Status::Ok();
}

// A name (cluster, node, job id, metric, ...): a string of at most kMaxNameBytes bytes.
Status NameTooLong(std::string_view field, size_t bytes) {
  return Status::Error("field \"" + std::string(field) + "\": name of " + std::to_string(bytes) +
                       " bytes, more than " + std::to_string(kMaxNameBytes));
}

Status GetName(od::value v, std::string_view field, std::string_view& out) {
  if (auto e = v.get_string().get(out); e) return FieldError(field, e);
  if (out.size() > kMaxNameBytes) return NameTooLong(field, out.size());
  return Status::Ok();
}

// "v": the record's version, kRecordVersion. Another number (2, 1.5, 1e999) or a value of another
// type ("1") is a version this build does not read: reading it as version 1 would misread it.
Status CheckVersion(od::value v) {
  int64_t version = 0;
  if (v.get_int64().get(version) == simdjson::SUCCESS) {
    if (version == kRecordVersion) return Status::Ok();
    return Status::Error("field \"v\": version " + std::to_string(version) + " is not read (this build reads version " +
                         std::to_string(kRecordVersion) + ")");
  }
  std::string_view token = v.raw_json_token();
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t')) {
    token.remove_suffix(1);
  }
  return Status::Error("field \"v\": version " + QuotedValue(token) + " is not read (this build reads version " +
                       std::to_string(kRecordVersion) + ")");
}

Status TooMany(std::string_view field, size_t limit) {
  return Status::Error("field \"" + std::string(field) + "\": more than " + std::to_string(limit) + " values");
}

// A number or null (NaN). Numbers first: they are the common case, and a failed typed read leaves
// the value to be read again.
simdjson::error_code GetNumberOrNull(od::value v, double& out) {
  simdjson::error_code e = v.get_double().get(out);
  if (e != simdjson::INCORRECT_TYPE) return e;
  bool null = false;
  if (v.is_null().get(null) == simdjson::SUCCESS && null) {
    out = kNoSample;
    return simdjson::SUCCESS;
  }
  return e;
}

// The length of the token at p when it ends at a ',' or ']' within 8 bytes and has JSON's shape of
// an unsigned number (no leading zero before a digit) as far as ParseShortDecimal does not check it;
// else 0. Reads 8 bytes at p, so only when they are readable.
inline size_t ShortNumberLength(const char* p, const char* end, const char* readable_end) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = kOnes * 0x80;
  if (readable_end - p < 8) return 0;
  uint64_t w;
  std::memcpy(&w, p, 8);
  const uint64_t comma = w ^ (kOnes * ','), close = w ^ (kOnes * ']');
  // The lowest flagged byte is a true ',' or ']' (only bytes above one can be flagged falsely).
  const uint64_t stops = (((comma - kOnes) & ~comma) | ((close - kOnes) & ~close)) & kHigh;
  if (stops == 0) return 0;
  const size_t n = static_cast<size_t>(__builtin_ctzll(stops)) / 8;
  if (n == 0 || p + n >= end || (p[0] == '0' && n > 1 && p[1] != '.')) return 0;
  return n;
}

// The elements of a JSON array of numbers or nulls (null = no sample), from the array's raw text.
// A util record is a dozen such arrays: one pass over the text with ParseJsonNumberPrefix (correctly
// rounded, as simdjson) costs less than On-Demand's value-by-value reads, which were a quarter of
// `process` (bench/process_throughput.sh). Strict: anything but numbers, nulls, commas and JSON
// whitespace is an error.
// readable_end: bytes up to there may be read (ParseShortDecimal loads 8 at a time), at least raw's end.
simdjson::error_code ParseNumberArray(std::string_view raw, std::vector<double>& out, size_t max_values,
                                      const char* readable_end = nullptr) {
  const char* p = raw.data();
  const char* const end = p + raw.size();
  if (readable_end == nullptr || readable_end < end) readable_end = end;
  auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  auto skip_spaces = [&] {
    while (p != end && is_space(*p)) ++p;
  };
  // Values gather here and go to out in one append: out's header and storage (a reused record's,
  // last touched by another thread) are written once, not once per value.
  double chunk[32];
  size_t n = 0;
  auto add = [&](double d) {
    if (n == std::size(chunk)) {
      out.insert(out.end(), chunk, chunk + n);
      n = 0;
    }
    chunk[n++] = d;
  };
  skip_spaces();
  if (p == end || *p != '[') return simdjson::INCORRECT_TYPE;
  ++p;
  skip_spaces();
  if (p != end && *p == ']') {
    ++p;
  } else {
    for (;;) {
      if (out.size() + n == max_values) return simdjson::CAPACITY;  // one more value than allowed
      double d;
      if (const size_t len = ShortNumberLength(p, end, readable_end); len != 0 && ParseShortDecimal(p, len, d)) {
        // The common case: the ',' or ']' right after the number is known already.
        add(d);
        const char stop = p[len];
        p += len + 1;
        if (stop == ']') break;
        skip_spaces();
        continue;
      } else if (const char* next = ParseJsonNumberPrefix(p, end, d)) {
        add(d);
        p = next;
      } else if (end - p >= 4 && std::memcmp(p, "null", 4) == 0) {
        add(kNoSample);
        p += 4;
      } else {
        return p != end && (*p == '-' || (*p >= '0' && *p <= '9')) ? simdjson::NUMBER_ERROR : simdjson::INCORRECT_TYPE;
      }
      skip_spaces();
      if (p == end) return simdjson::TAPE_ERROR;
      if (*p == ']') {
        ++p;
        break;
      }
      if (*p != ',') return simdjson::TAPE_ERROR;
      ++p;
      skip_spaces();
    }
  }
  skip_spaces();
  if (p != end) return simdjson::TAPE_ERROR;
  out.insert(out.end(), chunk, chunk + n);
  return simdjson::SUCCESS;
}

}  // namespace

class FastScanner;

struct RecordParser::Impl {
  bool fast = true;  // try the fast path first
  od::parser parser;
  std::string padded;  // the input copied with simdjson's padding after it
  // Interned names seen by this parser: a lock-free front for InternName's shared table.
  std::vector<std::string_view> names;

  std::string_view Intern(std::string_view name) {
    for (std::string_view n : names) {
      if (n.size() == name.size() && std::memcmp(n.data(), name.data(), name.size()) == 0) return n;
    }
    std::string_view interned = InternName(name);
    names.push_back(interned);
    return interned;
  }

  simdjson::simdjson_result<od::document> Iterate(std::string_view json) {
    padded.assign(json);
    padded.resize(json.size() + simdjson::SIMDJSON_PADDING, '\0');
    return parser.iterate(padded.data(), json.size(), padded.size());
  }

  // The fast path (below): true when it parsed the text completely, false to hand it to simdjson.
  bool FastValue(RecordKind kind, std::string_view json, Record& out);
  bool FastFramedLine(std::string_view line, Record& out, std::string* key);
  bool FastUtil(FastScanner& in, UtilSample& s);
  // The trace-time member's value by the fast path: true when it settled the answer (`ts`, or
  // kNoTraceTs for an object without the member), false to hand the text to simdjson.
  bool FastTraceTime(std::string_view field, std::string_view json, int64_t& ts);

  Status ParseJob(od::object obj, JobEvent& e);
  Status ParseUtil(od::object obj, UtilSample& s);
  Status ParsePower(od::object obj, PowerSample& p);
  Status ParseMetrics(od::object obj, MetricsWindow& m);
  Status ParseAnomaly(od::object obj, AnomalyEvent& a);
  Status ParseObject(RecordKind kind, od::object obj, Record& out);
};

#define ACMETRACE_GET(field_name, expr)                       \
  do {                                                        \
    if (auto acme_err = (expr); acme_err) return FieldError(field_name, acme_err); \
  } while (0)

// Every member of an object of numbers or nulls ("host", "fields", "metrics"): add(name, value).
template <typename Add>
Status ParseNumberObject(od::value v, std::string_view object_name, Add add) {
  od::object obj;
  ACMETRACE_GET(object_name, v.get_object().get(obj));
  size_t count = 0;
  for (auto member : obj) {
    if (++count > kMaxValuesPerObject) return TooMany(object_name, kMaxValuesPerObject);
    std::string_view name;
    ACMETRACE_GET(object_name, member.unescaped_key().get(name));
    if (name.size() > kMaxNameBytes) return NameTooLong(object_name, name.size());
    od::value mv;
    ACMETRACE_GET(name, member.value().get(mv));
    double d;
    ACMETRACE_GET(name, GetNumberOrNull(mv, d));
    add(name, d);
  }
  return Status::Ok();
}

namespace {

// An object's members: "v" checked here, every other one given to field(key, value), which returns its
// error or Ok (and skips keys it does not know).
template <typename Field>
Status ForEachMember(od::object obj, Field field) {
  for (auto member : obj) {
    std::string_view key;
    ACMETRACE_GET("(key)", member.unescaped_key().get(key));
    od::value v;
    ACMETRACE_GET(key, member.value().get(v));
    if (Status st = key == "v" ? CheckVersion(v) : field(key, v); !st.ok()) return st;
  }
  return Status::Ok();
}

// A name, an event time, an integer, a number or null: into out, and seen set where the field is required.
Status GetName(od::value v, std::string_view field, std::string& out, bool* seen = nullptr) {
  std::string_view s;
  if (Status st = GetName(v, field, s); !st.ok()) return st;
  out.assign(s);
  if (seen != nullptr) *seen = true;
  return Status::Ok();
}
Status GetTraceTime(od::value v, std::string_view field, int64_t& out, bool& seen) {
  if (Status st = GetTraceTime(v, field, out); !st.ok()) return st;
  seen = true;
  return Status::Ok();
}
Status GetInt(od::value v, std::string_view field, int64_t& out) {
  ACMETRACE_GET(field, v.get_int64().get(out));
  return Status::Ok();
}
Status GetNumber(od::value v, std::string_view field, double& out) {
  ACMETRACE_GET(field, GetNumberOrNull(v, out));
  return Status::Ok();
}

// The first of a record's required fields that was not seen, as an error; else Ok.
Status FirstMissing(std::initializer_list<std::pair<bool, std::string_view>> required) {
  for (const auto& [seen, name] : required) {
    if (!seen) return Missing(name);
  }
  return Status::Ok();
}

}  // namespace

Status RecordParser::Impl::ParseJob(od::object obj, JobEvent& e) {
  bool has_cluster = false, has_event = false, has_ts = false, has_job = false;
  e.queue_s = kNoSample;
  e.duration_s = kNoSample;
  e.gpu_time = kNoSample;
  e.state.clear();
  e.user.clear();
  e.type.clear();
  e.node_num = e.gpu_num = e.cpu_num = 0;
  Status st = ForEachMember(obj, [&](std::string_view key, od::value v) -> Status {
    if (key == "cluster") return GetName(v, key, e.cluster, &has_cluster);
    if (key == "event") {
      std::string_view s;
      if (Status name = GetName(v, key, s); !name.ok()) return name;
      if (s == "submit") {
        e.event = JobEventKind::kSubmit;
      } else if (s == "start") {
        e.event = JobEventKind::kStart;
      } else if (s == "end") {
        e.event = JobEventKind::kEnd;
      } else {
        return Status::Error("field \"event\": not submit, start or end");
      }
      has_event = true;
      return Status::Ok();
    }
    if (key == "ts_ms") return GetTraceTime(v, key, e.ts_ms, has_ts);
    if (key == "job_id") return GetName(v, key, e.job_id, &has_job);
    if (key == "user") return GetName(v, key, e.user);
    if (key == "type") return GetName(v, key, e.type);
    if (key == "node_num") return GetInt(v, key, e.node_num);
    if (key == "gpu_num") return GetInt(v, key, e.gpu_num);
    if (key == "cpu_num") return GetInt(v, key, e.cpu_num);
    if (key == "state") return GetName(v, key, e.state);
    if (key == "duration_s") return GetNumber(v, key, e.duration_s);
    if (key == "queue_s") return GetNumber(v, key, e.queue_s);
    if (key == "gpu_time") return GetNumber(v, key, e.gpu_time);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return FirstMissing({{has_cluster, "cluster"}, {has_event, "event"}, {has_ts, "ts_ms"}, {has_job, "job_id"}});
}

Status RecordParser::Impl::ParseUtil(od::object obj, UtilSample& s) {
  bool has_cluster = false, has_node = false, has_ts = false;
  s.host.clear();
  // Keep the vectors' capacity: a node's next sample has the same shape.
  size_t gpu_used = 0;
  Status st = ForEachMember(obj, [&](std::string_view key, od::value v) -> Status {
    if (key == "cluster") return GetName(v, key, s.cluster, &has_cluster);
    if (key == "node") return GetName(v, key, s.node, &has_node);
    if (key == "ts_ms") return GetTraceTime(v, key, s.ts_ms, has_ts);
    if (key == "host") {
      return ParseNumberObject(v, key, [&](std::string_view name, double d) {
        s.host.push_back(HostMetric{Intern(name), d});
      });
    }
    if (key != "gpu") return Status::Ok();
    od::object gpu;
    ACMETRACE_GET(key, v.get_object().get(gpu));
    for (auto metric : gpu) {
      if (gpu_used == kMaxValuesPerObject) return TooMany("gpu", kMaxValuesPerObject);
      std::string_view name;
      ACMETRACE_GET("gpu", metric.unescaped_key().get(name));
      if (name.size() > kMaxNameBytes) return NameTooLong("gpu", name.size());
      if (gpu_used == s.gpu.size()) s.gpu.emplace_back();
      GpuMetric& m = s.gpu[gpu_used++];
      if (m.name != name) m.name = Intern(name);  // a reused record mostly has the same shape
      m.values.clear();
      od::array values;
      ACMETRACE_GET(name, metric.value().get_array().get(values));
      std::string_view raw;
      ACMETRACE_GET(name, values.raw_json().get(raw));
      if (auto e = ParseNumberArray(raw, m.values, kMaxGpusPerNode); e == simdjson::CAPACITY) {
        return TooMany(name, kMaxGpusPerNode);  // one GPU per value
      } else if (e) {
        return FieldError(name, e);
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  s.gpu.resize(gpu_used);
  return FirstMissing({{has_cluster, "cluster"}, {has_node, "node"}, {has_ts, "ts_ms"}});
}

Status RecordParser::Impl::ParsePower(od::object obj, PowerSample& p) {
  bool has_cluster = false, has_model = false, has_ts = false;
  p.fields.clear();
  Status st = ForEachMember(obj, [&](std::string_view key, od::value v) -> Status {
    if (key == "cluster") return GetName(v, key, p.cluster, &has_cluster);
    if (key == "model") return GetName(v, key, p.model, &has_model);
    if (key == "ts_ms") return GetTraceTime(v, key, p.ts_ms, has_ts);
    if (key != "fields") return Status::Ok();
    return ParseNumberObject(v, key, [&](std::string_view name, double d) { p.fields.emplace_back(Intern(name), d); });
  });
  if (!st.ok()) return st;
  return FirstMissing({{has_cluster, "cluster"}, {has_model, "model"}, {has_ts, "ts_ms"}});
}

Status RecordParser::Impl::ParseMetrics(od::object obj, MetricsWindow& m) {
  bool has_cluster = false, has_start = false, has_end = false;
  m.metrics.clear();
  m.window_s = 60;
  Status st = ForEachMember(obj, [&](std::string_view key, od::value v) -> Status {
    if (key == "cluster") return GetName(v, key, m.cluster, &has_cluster);
    if (key == "window_s") return GetInt(v, key, m.window_s);
    if (key == "start_ms") return GetTraceTime(v, key, m.start_ms, has_start);
    if (key == "end_ms") return GetTraceTime(v, key, m.end_ms, has_end);
    if (key != "metrics") return Status::Ok();
    return ParseNumberObject(v, key, [&](std::string_view name, double d) { m.metrics.emplace_back(std::string(name), d); });
  });
  if (!st.ok()) return st;
  if (Status missing = FirstMissing({{has_cluster, "cluster"}, {has_start, "start_ms"}, {has_end, "end_ms"}});
      !missing.ok()) {
    return missing;
  }
  m.ts_ms = m.end_ms;
  return Status::Ok();
}

Status RecordParser::Impl::ParseAnomaly(od::object obj, AnomalyEvent& a) {
  bool has_cluster = false, has_kind = false, has_subject = false, has_state = false, has_ts = false;
  a.value = kNoSample;
  a.threshold = kNoSample;
  Status st = ForEachMember(obj, [&](std::string_view key, od::value v) -> Status {
    if (key == "cluster") return GetName(v, key, a.cluster, &has_cluster);
    if (key == "kind") return GetName(v, key, a.kind, &has_kind);
    if (key == "subject") return GetName(v, key, a.subject, &has_subject);
    if (key == "state") {
      std::string_view str;
      if (Status name = GetName(v, key, str); !name.ok()) return name;
      if (str == "open") {
        a.open = true;
      } else if (str == "close") {
        a.open = false;
      } else {
        return Status::Error("field \"state\": not open or close");
      }
      has_state = true;
      return Status::Ok();
    }
    if (key == "ts_ms") return GetTraceTime(v, key, a.ts_ms, has_ts);
    if (key == "value") return GetNumber(v, key, a.value);
    if (key == "threshold") return GetNumber(v, key, a.threshold);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return FirstMissing(
      {{has_cluster, "cluster"}, {has_kind, "kind"}, {has_subject, "subject"}, {has_state, "state"}, {has_ts, "ts_ms"}});
}

#undef ACMETRACE_GET

namespace {
template <typename T>
T& Emplace(Record& out) {
  if (!std::holds_alternative<T>(out)) out.emplace<T>();
  return std::get<T>(out);
}
}  // namespace

Status RecordParser::Impl::ParseObject(RecordKind kind, od::object obj, Record& out) {
  switch (kind) {
    case RecordKind::kJob: return ParseJob(obj, Emplace<JobEvent>(out));
    case RecordKind::kUtil: return ParseUtil(obj, Emplace<UtilSample>(out));
    case RecordKind::kPower: return ParsePower(obj, Emplace<PowerSample>(out));
    case RecordKind::kMetrics: return ParseMetrics(obj, Emplace<MetricsWindow>(out));
    case RecordKind::kAnomaly: return ParseAnomaly(obj, Emplace<AnomalyEvent>(out));
    case RecordKind::kUnknown: break;
  }
  return Status::Error("unknown topic");
}


// ---- The fast path ----------------------------------------------------------------------------------
//
// Most of the feed is util records exactly as record_json.cc writes them: a flat object of plain ASCII
// strings, one integer time and arrays of numbers. FastScanner reads that shape straight from the
// text, without simdjson's structural index (its stage 1 alone cost more than the whole scan) and
// without copying the text into a padded buffer. It accepts a strict subset of what the simdjson path
// accepts, and gives the same record for it: strings without escapes, control characters or non-ASCII
// bytes, numbers in the shape ParseJsonNumberPrefix reads exactly, the arrays through the same
// ParseNumberArray, nothing but whitespace after the object. Anything else (another shape, an error
// of any kind) makes it give up, and the simdjson path parses the text from the start: so every error
// message, with its field, is the simdjson path's.

/// A cursor over JSON text for the fast path. Each method returns false where the text leaves the
/// shape it reads (the caller then gives up). Not thread-safe.
class FastScanner {
 public:
  FastScanner(const char* p, const char* end) : p_(p), end_(end) {}

  void SkipSpaces() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Take(char c) {
    SkipSpaces();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool Peek(char c) {
    SkipSpaces();
    return p_ != end_ && *p_ == c;
  }
  bool AtEnd() {
    SkipSpaces();
    return p_ == end_;
  }
  /// A string of printable ASCII without backslashes: its bytes are its value.
  bool String(std::string_view& out) {
    if (!Take('"')) return false;
    const char* const start = p_;
    // 8 bytes at a time up to the first '"', '\\', control character or non-ASCII byte: the lowest
    // flagged byte is always one of them (a byte can be flagged falsely only above a true one, by a
    // borrow), so the scan jumps to it and the loop below looks at that byte alone.
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = kOnes * 0x80;
    while (end_ - p_ >= 8) {
      uint64_t w;
      std::memcpy(&w, p_, 8);
      const uint64_t quote = w ^ (kOnes * '"'), backslash = w ^ (kOnes * '\\');
      const uint64_t special = (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                                (w - kOnes * 0x20) | w) &  // '"', '\\', < 0x20 (borrow), >= 0x80
                               kHigh;
      if (special != 0) {
        p_ += static_cast<size_t>(__builtin_ctzll(special)) / 8;
        break;
      }
      p_ += 8;
    }
    for (; p_ != end_; ++p_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
    }
    return false;
  }
  /// An integer [1-9][0-9]{0,17} (the digits of a trace time; others are the simdjson path's).
  bool Int(int64_t& out) {
    SkipSpaces();
    const char* const start = p_;
    if (p_ == end_ || *p_ < '1' || *p_ > '9') return false;
    int64_t v = 0;
    for (; p_ != end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
      if (p_ - start == 18) return false;
      v = v * 10 + (*p_ - '0');
    }
    out = v;
    return EndOfScalar();
  }
  /// A number without exponent that ExactDecimalValue converts (the value simdjson gives it), or null.
  bool NumberOrNull(double& out) {
    SkipSpaces();
    if (end_ - p_ >= 4 && std::memcmp(p_, "null", 4) == 0) {
      p_ += 4;
      out = kNoSample;
      return EndOfScalar();
    }
    const internal::DecimalScan d = internal::ScanDecimal(p_, end_);
    const char* const integer = d.negative ? p_ + 1 : p_;
    if (d.integer_digits == 0 || (d.integer_digits > 1 && *integer == '0') || (d.dot && d.fraction_digits == 0)) {
      return false;
    }
    if (!internal::ExactDecimalValue(d, out)) return false;
    p_ = d.end;
    return EndOfScalar();
  }
  /// The text from '[' to the first ']' (an array of numbers for ParseNumberArray).
  bool FlatArray(std::string_view& out) {
    if (!Peek('[')) return false;
    const char* const start = p_;
    // Whatever else comes before the ']' (a string, a nested array) ParseNumberArray rejects.
    const void* close = std::memchr(p_, ']', static_cast<size_t>(end_ - p_));
    if (close == nullptr) return false;
    const char* const stop = static_cast<const char*>(close) + 1;
    out = std::string_view(start, static_cast<size_t>(stop - start));
    p_ = stop;
    return true;
  }
  /// A value of a field the record does not use: a number, string, true, false or null.
  bool SkipScalar() {
    SkipSpaces();
    if (p_ == end_) return false;
    if (*p_ == '"') {
      std::string_view ignored;
      return String(ignored);
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (static_cast<size_t>(end_ - p_) >= word.size() && std::memcmp(p_, word.data(), word.size()) == 0) {
        p_ += word.size();
        return EndOfScalar();
      }
    }
    double ignored;
    return NumberOrNull(ignored);
  }
  /// After a scalar: the next non-space character ends it (',', '}' or ']'), or the text ends.
  bool EndOfScalar() {
    SkipSpaces();
    return p_ == end_ || *p_ == ',' || *p_ == '}' || *p_ == ']';
  }
  /// Between an object's members: true and sets more to whether another member follows.
  bool NextMember(bool& more) {
    SkipSpaces();
    if (p_ != end_ && *p_ == ',') {
      ++p_;
      more = true;
      return true;
    }
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      more = false;
      return true;
    }
    return false;
  }
  /// The start of an object: '{', then whether it has members.
  bool OpenObject(bool& has_members) {
    if (!Take('{')) return false;
    has_members = !Peek('}');
    if (!has_members) ++p_;
    return true;
  }
  const char* end() const { return end_; }
  /// A member's key and the ':' after it.
  bool Key(std::string_view& key) { return String(key) && Take(':'); }

 private:
  const char* p_;
  const char* const end_;
};

bool RecordParser::Impl::FastUtil(FastScanner& in, UtilSample& s) {
  bool has_cluster = false, has_node = false, has_ts = false, more = false;
  size_t gpu_used = 0;
  s.host.clear();
  if (!in.OpenObject(more)) return false;
  while (more) {
    std::string_view key, str;
    if (!in.Key(key)) return false;
    if (key == "v") {
      int64_t version = 0;
      if (!in.Int(version) || version != kRecordVersion) return false;
    } else if (key == "cluster") {
      if (!in.String(str) || str.size() > kMaxNameBytes) return false;
      s.cluster.assign(str);
      has_cluster = true;
    } else if (key == "node") {
      if (!in.String(str) || str.size() > kMaxNameBytes) return false;
      s.node.assign(str);
      has_node = true;
    } else if (key == "ts_ms") {
      if (!in.Int(s.ts_ms) || !IsTraceTimeMs(s.ts_ms)) return false;
      has_ts = true;
    } else if (key == "gpu") {
      bool metrics = false;
      if (!in.OpenObject(metrics)) return false;
      while (metrics) {
        std::string_view name, raw;
        if (gpu_used == kMaxValuesPerObject || !in.Key(name) || name.size() > kMaxNameBytes || !in.FlatArray(raw)) {
          return false;
        }
        if (gpu_used == s.gpu.size()) s.gpu.emplace_back();
        GpuMetric& m = s.gpu[gpu_used++];
        if (m.name != name) m.name = Intern(name);
        m.values.clear();
        if (ParseNumberArray(raw, m.values, kMaxGpusPerNode, in.end()) != simdjson::SUCCESS) return false;
        if (!in.NextMember(metrics)) return false;
      }
    } else if (key == "host") {
      bool metrics = false;
      if (!in.OpenObject(metrics)) return false;
      size_t count = 0;
      while (metrics) {
        std::string_view name;
        double d;
        if (++count > kMaxValuesPerObject || !in.Key(name) || name.size() > kMaxNameBytes || !in.NumberOrNull(d)) {
          return false;
        }
        s.host.push_back(HostMetric{Intern(name), d});
        if (!in.NextMember(metrics)) return false;
      }
    } else if (!in.SkipScalar()) {
      return false;
    }
    if (!in.NextMember(more)) return false;
  }
  s.gpu.resize(gpu_used);
  return has_cluster && has_node && has_ts;
}

bool RecordParser::Impl::FastValue(RecordKind kind, std::string_view json, Record& out) {
  if (kind != RecordKind::kUtil) return false;
  FastScanner in(json.data(), json.data() + json.size());
  return FastUtil(in, Emplace<UtilSample>(out)) && in.AtEnd();
}

bool RecordParser::Impl::FastFramedLine(std::string_view line, Record& out, std::string* key) {
  FastScanner in(line.data(), line.data() + line.size());
  bool more = false, has_topic = false, has_value = false;
  if (!in.OpenObject(more)) return false;
  while (more) {
    std::string_view name, str;
    if (!in.Key(name)) return false;
    if (name == "topic") {
      if (!in.String(str) || RecordKindOfTopic(str) != RecordKind::kUtil) return false;
      has_topic = true;
    } else if (name == "key") {
      if (!in.String(str)) return false;
      if (key != nullptr) key->assign(str);
    } else if (name == "value") {
      if (!has_topic || !FastUtil(in, Emplace<UtilSample>(out))) return false;  // the value first: deferred
      has_value = true;
    } else {
      return false;
    }
    if (!in.NextMember(more)) return false;
  }
  return has_topic && has_value && in.AtEnd();
}

bool RecordParser::Impl::FastTraceTime(std::string_view field, std::string_view json, int64_t& ts) {
  FastScanner in(json.data(), json.data() + json.size());
  bool more = false;
  if (!in.OpenObject(more)) return false;
  while (more) {
    std::string_view key;
    if (!in.Key(key)) return false;
    if (key == field) {
      if (!in.Int(ts)) return false;
      if (!IsTraceTimeMs(ts)) ts = kNoTraceTs;
      return true;
    }
    if (!in.SkipScalar() || !in.NextMember(more)) return false;  // an object or array before it: simdjson
  }
  ts = kNoTraceTs;
  return true;
}

RecordParser::RecordParser(Path path) : impl_(std::make_unique<Impl>()) { impl_->fast = path == Path::kFastFirst; }
RecordParser::~RecordParser() = default;

Status RecordParser::ParseValue(std::string_view topic, std::string_view json, Record& out) {
  const RecordKind kind = RecordKindOfTopic(topic);
  if (kind == RecordKind::kUnknown) return Status::Error("unknown topic " + QuotedValue(topic));
  if (impl_->fast && impl_->FastValue(kind, json, out)) return Status::Ok();
  od::document doc;
  if (auto e = impl_->Iterate(json).get(doc); e) return FieldError("(value)", e);
  od::object obj;
  if (auto e = doc.get_object().get(obj); e) return Status::Error(std::string("value: not a JSON object: ") + simdjson::error_message(e));
  return impl_->ParseObject(kind, obj, out);
}

Status RecordParser::ParseFramedLine(std::string_view line, Record& out, std::string* key) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (impl_->fast && impl_->FastFramedLine(line, out, key)) return Status::Ok();
  od::document doc;
  if (auto e = impl_->Iterate(line).get(doc); e) return FieldError("(line)", e);
  od::object obj;
  if (auto e = doc.get_object().get(obj); e) return Status::Error(std::string("line: not a JSON object: ") + simdjson::error_message(e));
  std::string topic;
  bool has_topic = false, has_value = false;
  std::string deferred;  // the value's raw JSON when it came before the topic
  for (auto field : obj) {
    std::string_view name;
    if (auto e = field.unescaped_key().get(name); e) return FieldError("(key)", e);
    if (name == "topic") {
      std::string_view t;
      if (auto e = field.value().get_string().get(t); e) return FieldError("topic", e);
      topic.assign(t);
      has_topic = true;
    } else if (name == "key") {
      std::string_view k;
      if (auto e = field.value().get_string().get(k); e) return FieldError("key", e);
      if (key != nullptr) key->assign(k);
    } else if (name == "value") {
      od::object value;
      if (auto e = field.value().get_object().get(value); e) return FieldError("value", e);
      if (has_topic) {
        const RecordKind kind = RecordKindOfTopic(topic);
        if (kind == RecordKind::kUnknown) return Status::Error("unknown topic " + QuotedValue(topic));
        Status s = impl_->ParseObject(kind, value, out);
        if (!s.ok()) return Status::Error("value: " + s.message());
      } else {
        std::string_view raw;
        if (auto e = value.raw_json().get(raw); e) return FieldError("value", e);
        deferred.assign(raw);
      }
      has_value = true;
    }
  }
  if (!has_topic) return Missing("topic");
  if (!has_value) return Missing("value");
  if (!deferred.empty()) {
    Status s = ParseValue(topic, deferred, out);
    if (!s.ok()) return Status::Error("value: " + s.message());
  }
  return Status::Ok();
}

int64_t RecordParser::TraceTimeOf(std::string_view topic, std::string_view json) {
  const RecordKind kind = RecordKindOfTopic(topic);
  if (kind == RecordKind::kUnknown) return kNoTraceTs;
  const std::string_view field = kind == RecordKind::kMetrics ? "end_ms" : "ts_ms";
  int64_t ts = kNoTraceTs;
  if (impl_->fast && impl_->FastTraceTime(field, json, ts)) return ts;
  od::document doc;
  od::object obj;
  od::value member;
  if (impl_->Iterate(json).get(doc) != simdjson::SUCCESS || doc.get_object().get(obj) != simdjson::SUCCESS ||
      obj.find_field_unordered(field).get(member) != simdjson::SUCCESS ||
      member.get_int64().get(ts) != simdjson::SUCCESS || !IsTraceTimeMs(ts)) {
    return kNoTraceTs;
  }
  return ts;
}

}  // namespace acmetrace::core
