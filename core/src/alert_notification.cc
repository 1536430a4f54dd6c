// Alertmanager's webhook body and acmetrace's notification lines, through simdjson's DOM (a body is
// at most 64 KiB: clarity over speed here).
#include "acmetrace/core/alert_notification.h"

#include <simdjson.h>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/time.h"

namespace acmetrace::core {
namespace {

namespace dom = simdjson::dom;

// The field names of the two forms: Alertmanager's body and our line.
struct FieldNames {
  const char* group_key;
  const char* group_labels;
  const char* truncated_alerts;
  const char* starts_at;
  const char* ends_at;
};
constexpr FieldNames kWebhookFields{"groupKey", "groupLabels", "truncatedAlerts", "startsAt", "endsAt"};
constexpr FieldNames kLineFields{"group_key", "group_labels", "truncated_alerts", "starts_at", "ends_at"};

// Strings kept from a body: a name or value longer than this is not a real label.
constexpr size_t kMaxStringBytes = 16 * 1024;

Status FieldError(const std::string& field, std::string_view reason) {
  return Status::Error(field + ": " + std::string(reason));
}

// A string field; absent is an error when required, else "".
Status GetString(dom::object object, const char* name, const std::string& path, bool required, std::string& out) {
  dom::element value;
  if (object[name].get(value) != simdjson::SUCCESS) {
    if (required) return FieldError(path + name, "missing");
    out.clear();
    return Status::Ok();
  }
  std::string_view text;
  if (value.get(text) != simdjson::SUCCESS) return FieldError(path + name, "expected a string");
  if (text.size() > kMaxStringBytes) return FieldError(path + name, "longer than 16 KiB");
  out.assign(text);
  return Status::Ok();
}

Status GetStatus(dom::object object, const std::string& path, std::string& out) {
  if (Status s = GetString(object, "status", path, true, out); !s.ok()) return s;
  if (out != "firing" && out != "resolved") {
    return FieldError(path + "status", "expected firing or resolved, got " + QuotedValue(out));
  }
  return Status::Ok();
}

Status GetLabels(dom::object object, const char* name, const std::string& path, bool required, AlertLabelSet& out) {
  out.clear();
  dom::element value;
  if (object[name].get(value) != simdjson::SUCCESS) {
    return required ? FieldError(path + name, "missing") : Status::Ok();
  }
  dom::object labels;
  if (value.get(labels) != simdjson::SUCCESS) return FieldError(path + name, "expected an object of strings");
  for (dom::key_value_pair field : labels) {
    std::string_view text;
    if (field.value.get(text) != simdjson::SUCCESS) return FieldError(path + name, "expected an object of strings");
    if (field.key.empty()) return FieldError(path + name, "a label with an empty name");
    if (field.key.size() > kMaxStringBytes || text.size() > kMaxStringBytes) {
      return FieldError(path + name, "a label longer than 16 KiB");
    }
    if (out.size() == kMaxNotificationLabels) {
      return FieldError(path + name, "more than " + std::to_string(kMaxNotificationLabels) + " labels");
    }
    out[std::string(field.key)] = std::string(text);
  }
  return Status::Ok();
}

Result<AlertNotification> ParseNotification(std::string_view text, const FieldNames& names, bool webhook) {
  dom::parser parser;
  dom::element doc;
  if (simdjson::error_code e = parser.parse(text.data(), text.size()).get(doc); e != simdjson::SUCCESS) {
    return Status::Error(std::string("not JSON: ") + simdjson::error_message(e));
  }
  dom::object root;
  if (doc.get(root) != simdjson::SUCCESS) return Status::Error("expected a JSON object");
  AlertNotification n;
  if (webhook) {
    std::string version;
    if (Status s = GetString(root, "version", "", true, version); !s.ok()) return s;
    if (version != "4") return FieldError("version", "expected \"4\" (Alertmanager's webhook format)");
  } else {
    int64_t received = 0;
    if (root["received_ms"].get(received) != simdjson::SUCCESS) return FieldError("received_ms", "expected an integer");
    n.received_ms = received;
    dom::element trace;
    if (root["trace_ms"].get(trace) != simdjson::SUCCESS) return FieldError("trace_ms", "missing");
    if (!trace.is_null()) {
      int64_t ms = 0;
      if (trace.get(ms) != simdjson::SUCCESS || !IsTraceTimeMs(ms)) {
        return FieldError("trace_ms", "expected null or unix milliseconds of the years 2000-2099");
      }
      n.trace_ms = ms;
    }
  }
  if (Status s = GetString(root, "receiver", "", true, n.receiver); !s.ok()) return s;
  if (Status s = GetStatus(root, "", n.status); !s.ok()) return s;
  if (Status s = GetString(root, names.group_key, "", false, n.group_key); !s.ok()) return s;
  if (Status s = GetLabels(root, names.group_labels, "", false, n.group_labels); !s.ok()) return s;
  dom::element truncated;
  if (root[names.truncated_alerts].get(truncated) == simdjson::SUCCESS) {
    int64_t count = 0;
    if (truncated.get(count) != simdjson::SUCCESS || count < 0) {
      return FieldError(names.truncated_alerts, "expected a count");
    }
    n.truncated_alerts = count;
  }
  dom::array alerts;
  if (root["alerts"].get(alerts) != simdjson::SUCCESS) return FieldError("alerts", "expected an array");
  if (alerts.size() > kMaxNotifiedAlerts) {
    return FieldError("alerts", "more than " + std::to_string(kMaxNotifiedAlerts) + " alerts");
  }
  size_t index = 0;
  for (dom::element element : alerts) {
    const std::string path = "alerts[" + std::to_string(index++) + "].";
    dom::object object;
    if (element.get(object) != simdjson::SUCCESS) return Status::Error(path.substr(0, path.size() - 1) + ": expected an object");
    NotifiedAlert alert;
    if (Status s = GetStatus(object, path, alert.status); !s.ok()) return s;
    if (Status s = GetLabels(object, "labels", path, true, alert.labels); !s.ok()) return s;
    if (Status s = GetString(object, names.starts_at, path, false, alert.starts_at); !s.ok()) return s;
    if (Status s = GetString(object, names.ends_at, path, false, alert.ends_at); !s.ok()) return s;
    if (Status s = GetString(object, "fingerprint", path, false, alert.fingerprint); !s.ok()) return s;
    n.alerts.push_back(std::move(alert));
  }
  return n;
}

void AppendLabels(std::string& out, const AlertLabelSet& labels) {
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, name);
    out += ':';
    AppendJsonString(out, value);
  }
  out += '}';
}

}  // namespace

Result<AlertNotification> ParseAlertmanagerWebhook(std::string_view body) {
  return ParseNotification(body, kWebhookFields, true);
}

Result<AlertNotification> ParseNotificationLine(std::string_view line) {
  if (line.size() > kMaxNotificationLineBytes) return Status::Error("a line longer than 1 MiB");
  return ParseNotification(line, kLineFields, false);
}

std::string FormatNotificationLine(const AlertNotification& n) {
  std::string out = "{\"received_ms\":" + std::to_string(n.received_ms) + ",\"received\":";
  AppendJsonString(out, FormatIsoTime(n.received_ms, 0));
  if (n.trace_ms) {
    out += ",\"trace_ms\":" + std::to_string(*n.trace_ms) + ",\"trace_time\":";
    AppendJsonString(out, FormatIsoTime(*n.trace_ms, 0));
  } else {
    out += ",\"trace_ms\":null,\"trace_time\":null";
  }
  out += ",\"receiver\":";
  AppendJsonString(out, n.receiver);
  out += ",\"status\":";
  AppendJsonString(out, n.status);
  out += ",\"group_key\":";
  AppendJsonString(out, n.group_key);
  out += ",\"group_labels\":";
  AppendLabels(out, n.group_labels);
  out += ",\"truncated_alerts\":" + std::to_string(n.truncated_alerts) + ",\"alerts\":[";
  for (size_t i = 0; i < n.alerts.size(); ++i) {
    const NotifiedAlert& a = n.alerts[i];
    if (i > 0) out += ',';
    out += "{\"status\":";
    AppendJsonString(out, a.status);
    out += ",\"labels\":";
    AppendLabels(out, a.labels);
    out += ",\"starts_at\":";
    AppendJsonString(out, a.starts_at);
    out += ",\"ends_at\":";
    AppendJsonString(out, a.ends_at);
    out += ",\"fingerprint\":";
    AppendJsonString(out, a.fingerprint);
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace acmetrace::core
