// JSON writer for records: hand-rolled with to_chars because it runs once per replayed record.
#include "acmetrace/core/record_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace acmetrace::core {

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  // Names, keys and ids almost never need escaping: one scan, one append.
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20;
  });
  if (plain) {
    const size_t at = out.size();
    out.resize(at + s.size() + 2);
    char* p = out.data() + at;
    p[0] = '"';
    std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    return;
  }
  out.push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void AppendJsonNumber(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[32];
  // Integral values print without an exponent or ".0" (queue 10.0 -> 10), others shortest round-trip.
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(value));
    (void)ec;
    out.append(buf, end);
    return;
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  out.append(buf, end);
}

namespace {

void AppendInt(std::string& out, int64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  out.append(buf, end);
}

void AppendHeader(std::string& out, std::string_view cluster) {
  out += "{\"v\":1,\"cluster\":";
  AppendJsonString(out, cluster);
}

void AppendJob(std::string& out, const JobEvent& e) {
  AppendHeader(out, e.cluster);
  out += ",\"event\":\"";
  out += JobEventKindName(e.event);
  out += "\",\"ts_ms\":";
  AppendInt(out, e.ts_ms);
  out += ",\"job_id\":";
  AppendJsonString(out, e.job_id);
  out += ",\"user\":";
  AppendJsonString(out, e.user);
  out += ",\"type\":";
  AppendJsonString(out, e.type);
  out += ",\"node_num\":";
  AppendInt(out, e.node_num);
  out += ",\"gpu_num\":";
  AppendInt(out, e.gpu_num);
  out += ",\"cpu_num\":";
  AppendInt(out, e.cpu_num);
  if (e.event == JobEventKind::kEnd) {
    out += ",\"state\":";
    AppendJsonString(out, e.state);
    out += ",\"duration_s\":";
    AppendJsonNumber(out, e.duration_s);
  }
  if (e.event != JobEventKind::kSubmit) {
    out += ",\"queue_s\":";
    AppendJsonNumber(out, e.queue_s);
  }
  if (e.event == JobEventKind::kEnd) {
    out += ",\"gpu_time\":";
    AppendJsonNumber(out, e.gpu_time);
  }
  out.push_back('}');
}

// {"name":number,...} of items; entry(item) gives the item's (name, value).
template <typename Items, typename Entry>
void AppendNumberObject(std::string& out, const Items& items, Entry entry) {
  out.push_back('{');
  bool first = true;
  for (const auto& item : items) {
    const auto [name, value] = entry(item);
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, name);
    out.push_back(':');
    AppendJsonNumber(out, value);
  }
  out.push_back('}');
}

template <typename Pair>
std::pair<std::string_view, double> AsEntry(const Pair& p) {
  return {p.first, p.second};
}

void AppendUtil(std::string& out, const UtilSample& s) {
  AppendHeader(out, s.cluster);
  out += ",\"node\":";
  AppendJsonString(out, s.node);
  out += ",\"ts_ms\":";
  AppendInt(out, s.ts_ms);
  out += ",\"gpu\":{";
  bool first = true;
  for (const GpuMetric& m : s.gpu) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, m.name);
    out += ":[";
    for (size_t i = 0; i < m.values.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendJsonNumber(out, m.values[i]);
    }
    out.push_back(']');
  }
  out += "},\"host\":";
  AppendNumberObject(out, s.host,
                     [](const HostMetric& m) { return std::pair<std::string_view, double>(m.name, m.value); });
  out.push_back('}');
}

void AppendPower(std::string& out, const PowerSample& p) {
  AppendHeader(out, p.cluster);
  out += ",\"model\":";
  AppendJsonString(out, p.model);
  out += ",\"ts_ms\":";
  AppendInt(out, p.ts_ms);
  out += ",\"fields\":";
  AppendNumberObject(out, p.fields, AsEntry<std::pair<std::string_view, double>>);
  out.push_back('}');
}

void AppendMetrics(std::string& out, const MetricsWindow& m) {
  AppendHeader(out, m.cluster);
  out += ",\"window_s\":";
  AppendInt(out, m.window_s);
  out += ",\"start_ms\":";
  AppendInt(out, m.start_ms);
  out += ",\"end_ms\":";
  AppendInt(out, m.end_ms);
  out += ",\"metrics\":";
  AppendNumberObject(out, m.metrics, AsEntry<std::pair<std::string, double>>);
  out.push_back('}');
}

void AppendAnomaly(std::string& out, const AnomalyEvent& a) {
  AppendHeader(out, a.cluster);
  out += ",\"kind\":";
  AppendJsonString(out, a.kind);
  out += ",\"subject\":";
  AppendJsonString(out, a.subject);
  out += a.open ? ",\"state\":\"open\"" : ",\"state\":\"close\"";
  out += ",\"ts_ms\":";
  AppendInt(out, a.ts_ms);
  out += ",\"value\":";
  AppendJsonNumber(out, a.value);
  out += ",\"threshold\":";
  AppendJsonNumber(out, a.threshold);
  out.push_back('}');
}

}  // namespace

void AppendRecordJson(std::string& out, const Record& record) {
  std::visit(
      [&out](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, JobEvent>) {
          AppendJob(out, r);
        } else if constexpr (std::is_same_v<T, UtilSample>) {
          AppendUtil(out, r);
        } else if constexpr (std::is_same_v<T, PowerSample>) {
          AppendPower(out, r);
        } else if constexpr (std::is_same_v<T, MetricsWindow>) {
          AppendMetrics(out, r);
        } else {
          AppendAnomaly(out, r);
        }
      },
      record);
}

void AppendFramedLine(std::string& out, const Record& record) {
  out += "{\"topic\":\"";
  out += TopicOf(record);
  out += "\",\"key\":\"";
  const size_t key_start = out.size();
  AppendKey(out, record);
  // Keys are cluster/job_id or cluster/node: escape in the rare case they need it.
  bool plain = true;
  for (size_t i = key_start; i < out.size(); ++i) {
    const auto u = static_cast<unsigned char>(out[i]);
    if (u < 0x20 || out[i] == '"' || out[i] == '\\') plain = false;
  }
  if (!plain) {
    std::string key = out.substr(key_start);
    out.resize(key_start - 1);
    AppendJsonString(out, key);
  } else {
    out.push_back('"');
  }
  out += ",\"value\":";
  AppendRecordJson(out, record);
  out += "}\n";
}

}  // namespace acmetrace::core
