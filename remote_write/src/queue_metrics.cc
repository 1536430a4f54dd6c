#include "acmetrace/remote_write/queue_metrics.h"

namespace acmetrace::remote_write {
namespace {

void AppendQuoted(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

void AppendQueueMetrics(std::string& out, const QueueStats& stats, std::string_view url) {
  std::string labels = "{url=";
  AppendQuoted(labels, url);
  labels += '}';
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    int64_t value;
  };
  const Family families[] = {
      {"acmetrace_remote_storage_samples_total", "counter", "Samples the remote write receiver accepted.",
       stats.samples_sent},
      {"acmetrace_remote_storage_samples_failed_total", "counter",
       "Samples refused by the receiver (a status not retried) or given up on after the last attempt.",
       stats.samples_failed},
      {"acmetrace_remote_storage_samples_retried_total", "counter",
       "Samples sent again after a 5xx, a 429 or no answer.", stats.samples_retried},
      {"acmetrace_remote_storage_samples_pending", "gauge", "Samples queued or in flight, not yet answered.",
       stats.samples_pending},
      {"acmetrace_remote_storage_bytes_total", "counter",
       "Bytes of the request bodies the receiver accepted (after compression).", stats.bytes_sent},
      {"acmetrace_remote_storage_shards", "gauge", "Parallel senders.", stats.shards},
      {"acmetrace_remote_storage_requests_total", "counter", "Requests sent, retries included.", stats.requests},
      {"acmetrace_remote_storage_requests_refused_total", "counter",
       "Requests answered with a status that is not retried (400, 401, 413...).", stats.requests_rejected},
      {"acmetrace_remote_storage_series_refused", "gauge", "Distinct series with samples in refused requests.",
       stats.series_refused},
  };
  for (const Family& f : families) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += f.help;
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += f.type;
    out += '\n';
    out += f.name;
    out += labels;
    out += ' ';
    out += std::to_string(f.value);
    out += '\n';
  }
}

std::string SeriesText(const std::vector<Label>& labels) {
  std::string out;
  for (const Label& l : labels) {
    if (l.name == "__name__") out += l.value;
  }
  out += '{';
  bool first = true;
  for (const Label& l : labels) {
    if (l.name == "__name__") continue;
    if (!first) out += ',';
    first = false;
    out += l.name;
    out += '=';
    AppendQuoted(out, l.value);
  }
  out += '}';
  return out;
}

}  // namespace acmetrace::remote_write
