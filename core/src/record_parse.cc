// Record parsing with simdjson On-Demand: the processors read every replayed record, so parsing is
// the hot path (bench/process_throughput.sh holds it against kcat).
#include "acmetrace/core/record_parse.h"

#include <simdjson.h>

#include <cstring>
#include <iterator>
#include <vector>

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

// The elements of a JSON array of numbers or nulls (null = no sample), from the array's raw text.
// A util record is a dozen such arrays: one pass over the text with ParseJsonNumberPrefix (correctly
// rounded, as simdjson) costs less than On-Demand's value-by-value reads, which were a quarter of
// `process` (bench/process_throughput.sh). Strict: anything but numbers, nulls, commas and JSON
// whitespace is an error.
simdjson::error_code ParseNumberArray(std::string_view raw, std::vector<double>& out, size_t max_values) {
  const char* p = raw.data();
  const char* const end = p + raw.size();
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
      if (const char* next = ParseJsonNumberPrefix(p, end, d)) {
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

struct RecordParser::Impl {
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
    od::value mv;
    ACMETRACE_GET(name, member.value().get(mv));
    double d;
    ACMETRACE_GET(name, GetNumberOrNull(mv, d));
    add(name, d);
  }
  return Status::Ok();
}

Status RecordParser::Impl::ParseJob(od::object obj, JobEvent& e) {
  bool has_cluster = false, has_event = false, has_ts = false, has_job = false;
  e.queue_s = kNoSample;
  e.duration_s = kNoSample;
  e.gpu_time = kNoSample;
  e.state.clear();
  e.user.clear();
  e.type.clear();
  e.node_num = e.gpu_num = e.cpu_num = 0;
  for (auto field : obj) {
    std::string_view key;
    ACMETRACE_GET("(key)", field.unescaped_key().get(key));
    od::value v;
    ACMETRACE_GET(key, field.value().get(v));
    std::string_view s;
    if (key == "cluster") {
      ACMETRACE_GET(key, v.get_string().get(s));
      e.cluster.assign(s);
      has_cluster = true;
    } else if (key == "event") {
      ACMETRACE_GET(key, v.get_string().get(s));
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
    } else if (key == "ts_ms") {
      if (Status st = GetTraceTime(v, key, e.ts_ms); !st.ok()) return st;
      has_ts = true;
    } else if (key == "job_id") {
      ACMETRACE_GET(key, v.get_string().get(s));
      e.job_id.assign(s);
      has_job = true;
    } else if (key == "user") {
      ACMETRACE_GET(key, v.get_string().get(s));
      e.user.assign(s);
    } else if (key == "type") {
      ACMETRACE_GET(key, v.get_string().get(s));
      e.type.assign(s);
    } else if (key == "node_num") {
      ACMETRACE_GET(key, v.get_int64().get(e.node_num));
    } else if (key == "gpu_num") {
      ACMETRACE_GET(key, v.get_int64().get(e.gpu_num));
    } else if (key == "cpu_num") {
      ACMETRACE_GET(key, v.get_int64().get(e.cpu_num));
    } else if (key == "state") {
      ACMETRACE_GET(key, v.get_string().get(s));
      e.state.assign(s);
    } else if (key == "duration_s") {
      ACMETRACE_GET(key, GetNumberOrNull(v, e.duration_s));
    } else if (key == "queue_s") {
      ACMETRACE_GET(key, GetNumberOrNull(v, e.queue_s));
    } else if (key == "gpu_time") {
      ACMETRACE_GET(key, GetNumberOrNull(v, e.gpu_time));
    }
  }
  if (!has_cluster) return Missing("cluster");
  if (!has_event) return Missing("event");
  if (!has_ts) return Missing("ts_ms");
  if (!has_job) return Missing("job_id");
  return Status::Ok();
}

Status RecordParser::Impl::ParseUtil(od::object obj, UtilSample& s) {
  bool has_cluster = false, has_node = false, has_ts = false;
  // Keep the vectors' capacity: a node's next sample has the same shape.
  size_t gpu_used = 0;
  s.host.clear();
  for (auto field : obj) {
    std::string_view key;
    ACMETRACE_GET("(key)", field.unescaped_key().get(key));
    od::value v;
    ACMETRACE_GET(key, field.value().get(v));
    std::string_view str;
    if (key == "cluster") {
      ACMETRACE_GET(key, v.get_string().get(str));
      s.cluster.assign(str);
      has_cluster = true;
    } else if (key == "node") {
      ACMETRACE_GET(key, v.get_string().get(str));
      s.node.assign(str);
      has_node = true;
    } else if (key == "ts_ms") {
      if (Status st = GetTraceTime(v, key, s.ts_ms); !st.ok()) return st;
      has_ts = true;
    } else if (key == "gpu") {
      od::object gpu;
      ACMETRACE_GET(key, v.get_object().get(gpu));
      for (auto metric : gpu) {
        if (gpu_used == kMaxValuesPerObject) return TooMany("gpu", kMaxValuesPerObject);
        std::string_view name;
        ACMETRACE_GET("gpu", metric.unescaped_key().get(name));
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
    } else if (key == "host") {
      Status st = ParseNumberObject(v, key, [&](std::string_view name, double d) {
        s.host.push_back(HostMetric{Intern(name), d});
      });
      if (!st.ok()) return st;
    }
  }
  s.gpu.resize(gpu_used);
  if (!has_cluster) return Missing("cluster");
  if (!has_node) return Missing("node");
  if (!has_ts) return Missing("ts_ms");
  return Status::Ok();
}

Status RecordParser::Impl::ParsePower(od::object obj, PowerSample& p) {
  bool has_cluster = false, has_model = false, has_ts = false;
  p.fields.clear();
  for (auto field : obj) {
    std::string_view key;
    ACMETRACE_GET("(key)", field.unescaped_key().get(key));
    od::value v;
    ACMETRACE_GET(key, field.value().get(v));
    std::string_view str;
    if (key == "cluster") {
      ACMETRACE_GET(key, v.get_string().get(str));
      p.cluster.assign(str);
      has_cluster = true;
    } else if (key == "model") {
      ACMETRACE_GET(key, v.get_string().get(str));
      p.model.assign(str);
      has_model = true;
    } else if (key == "ts_ms") {
      if (Status st = GetTraceTime(v, key, p.ts_ms); !st.ok()) return st;
      has_ts = true;
    } else if (key == "fields") {
      Status st = ParseNumberObject(v, key, [&](std::string_view name, double d) {
        p.fields.emplace_back(Intern(name), d);
      });
      if (!st.ok()) return st;
    }
  }
  if (!has_cluster) return Missing("cluster");
  if (!has_model) return Missing("model");
  if (!has_ts) return Missing("ts_ms");
  return Status::Ok();
}

Status RecordParser::Impl::ParseMetrics(od::object obj, MetricsWindow& m) {
  bool has_cluster = false, has_start = false, has_end = false;
  m.metrics.clear();
  m.window_s = 60;
  for (auto field : obj) {
    std::string_view key;
    ACMETRACE_GET("(key)", field.unescaped_key().get(key));
    od::value v;
    ACMETRACE_GET(key, field.value().get(v));
    std::string_view str;
    if (key == "cluster") {
      ACMETRACE_GET(key, v.get_string().get(str));
      m.cluster.assign(str);
      has_cluster = true;
    } else if (key == "window_s") {
      ACMETRACE_GET(key, v.get_int64().get(m.window_s));
    } else if (key == "start_ms") {
      if (Status st = GetTraceTime(v, key, m.start_ms); !st.ok()) return st;
      has_start = true;
    } else if (key == "end_ms") {
      if (Status st = GetTraceTime(v, key, m.end_ms); !st.ok()) return st;
      has_end = true;
    } else if (key == "metrics") {
      Status st = ParseNumberObject(v, key, [&](std::string_view name, double d) {
        m.metrics.emplace_back(std::string(name), d);
      });
      if (!st.ok()) return st;
    }
  }
  if (!has_cluster) return Missing("cluster");
  if (!has_start) return Missing("start_ms");
  if (!has_end) return Missing("end_ms");
  m.ts_ms = m.end_ms;
  return Status::Ok();
}

Status RecordParser::Impl::ParseAnomaly(od::object obj, AnomalyEvent& a) {
  bool has_cluster = false, has_kind = false, has_subject = false, has_state = false, has_ts = false;
  a.value = kNoSample;
  a.threshold = kNoSample;
  for (auto field : obj) {
    std::string_view key;
    ACMETRACE_GET("(key)", field.unescaped_key().get(key));
    od::value v;
    ACMETRACE_GET(key, field.value().get(v));
    std::string_view str;
    if (key == "cluster") {
      ACMETRACE_GET(key, v.get_string().get(str));
      a.cluster.assign(str);
      has_cluster = true;
    } else if (key == "kind") {
      ACMETRACE_GET(key, v.get_string().get(str));
      a.kind.assign(str);
      has_kind = true;
    } else if (key == "subject") {
      ACMETRACE_GET(key, v.get_string().get(str));
      a.subject.assign(str);
      has_subject = true;
    } else if (key == "state") {
      ACMETRACE_GET(key, v.get_string().get(str));
      if (str == "open") {
        a.open = true;
      } else if (str == "close") {
        a.open = false;
      } else {
        return Status::Error("field \"state\": not open or close");
      }
      has_state = true;
    } else if (key == "ts_ms") {
      if (Status st = GetTraceTime(v, key, a.ts_ms); !st.ok()) return st;
      has_ts = true;
    } else if (key == "value") {
      ACMETRACE_GET(key, GetNumberOrNull(v, a.value));
    } else if (key == "threshold") {
      ACMETRACE_GET(key, GetNumberOrNull(v, a.threshold));
    }
  }
  if (!has_cluster) return Missing("cluster");
  if (!has_kind) return Missing("kind");
  if (!has_subject) return Missing("subject");
  if (!has_state) return Missing("state");
  if (!has_ts) return Missing("ts_ms");
  return Status::Ok();
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

RecordParser::RecordParser() : impl_(std::make_unique<Impl>()) {}
RecordParser::~RecordParser() = default;

Status RecordParser::ParseValue(std::string_view topic, std::string_view json, Record& out) {
  const RecordKind kind = RecordKindOfTopic(topic);
  if (kind == RecordKind::kUnknown) return Status::Error("unknown topic \"" + std::string(topic) + "\"");
  od::document doc;
  if (auto e = impl_->Iterate(json).get(doc); e) return FieldError("(value)", e);
  od::object obj;
  if (auto e = doc.get_object().get(obj); e) return Status::Error(std::string("value: not a JSON object: ") + simdjson::error_message(e));
  return impl_->ParseObject(kind, obj, out);
}

Status RecordParser::ParseFramedLine(std::string_view line, Record& out, std::string* key) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
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
        if (kind == RecordKind::kUnknown) return Status::Error("unknown topic \"" + topic + "\"");
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

}  // namespace acmetrace::core
