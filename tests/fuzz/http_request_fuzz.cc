// libFuzzer target: raw bytes as a client's side of one connection, through the whole request
// handling of both HTTP endpoints (HttpConnection's parser and limits, then the replay control or
// the /metrics routes), delivered in chunks so the incremental parsing is exercised too. Checks
// that every answer is a well-formed response whose Content-Length matches its body.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/exporters/metrics_server.h"
#include "acmetrace/exporters/notification_log.h"
#include "acmetrace/http/http_connection.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/producers/replay_control.h"

namespace {

namespace core = acmetrace::core;
namespace exporters = acmetrace::exporters;
namespace http = acmetrace::http;
namespace producers = acmetrace::producers;

class NullSink : public core::RecordSink {
 public:
  core::Status Write(const core::Record&) override { return core::Status::Ok(); }
  core::Status Flush() override { return core::Status::Ok(); }
};

class EmptySource : public producers::RecordSource {
 public:
  const core::Record* Next() override { return nullptr; }
  int64_t bytes_read() const override { return 0; }
  int64_t bytes_total() const override { return 0; }
  core::Status status() const override { return core::Status::Ok(); }
};

// Built once: the endpoints' handlers need a replayer and an exporter, not their threads.
struct Endpoints {
  core::ManualClock clock;
  core::InputErrors errors{nullptr};
  NullSink sink;
  producers::Replayer replayer{
      [](producers::TimeRange) -> core::Result<std::unique_ptr<producers::RecordSource>> {
        return std::unique_ptr<producers::RecordSource>(std::make_unique<EmptySource>());
      },
      producers::TimeRange{}, sink, clock, errors, producers::ReplayOptions{}};
  producers::ReplayControlServer control{replayer};
  exporters::Exporter exporter{exporters::ExportOptions{}};
  exporters::MetricsServer metrics{exporter, exporters::ServerOptions{"127.0.0.1:0", "prom", "s3cret", 1, 0}};
  http::HttpHandler control_handler = [this](const http::HttpRequest& r) { return control.Handle(r); };
  http::HttpHandler metrics_handler = [this](const http::HttpRequest& r) { return metrics.Handle(r); };

  // Alertmanager's webhook records to /dev/null: its parsing and answers are what is fuzzed.
  std::unique_ptr<exporters::NotificationLog> notifications =
      exporters::NotificationLog::Open("/dev/null", [] { return std::optional<int64_t>(1'688'140'800'000); },
                                       [] { return int64_t{1'733'348'400'000}; })
          .value();

  Endpoints() {
    metrics.SetNotificationLog(notifications.get());
    core::UtilSample s;
    s.cluster = "seren";
    s.node = "10.0.0.1";
    s.ts_ms = 1000;
    s.gpu.push_back(core::GpuMetric{core::InternName("GPU_UTIL"), {99}});
    exporter.Apply(s);
  }
};

// A response's head must be a status line, header fields and a blank line, with the body it announces.
// (A HEAD answer has no body but announces the GET's length.)
void CheckResponse(const http::HttpOutput& out) {
  const std::string& h = out.head;
  if (h.compare(0, 9, "HTTP/1.1 ") != 0 || h.size() < 16 || h.compare(h.size() - 4, 4, "\r\n\r\n") != 0) std::abort();
  const size_t cl = h.find("\r\nContent-Length: ");
  if (cl == std::string::npos) std::abort();
  const size_t length = std::strtoull(h.c_str() + cl + 18, nullptr, 10);
  if (out.body && out.body->size() != length) std::abort();
  // No header line may be split by what a client sent.
  for (size_t at = h.find("\r\n"); at + 4 < h.size(); at = h.find("\r\n", at + 2)) {
    if (h[at + 2] == '\r' || h[at + 2] == '\n') std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Endpoints* endpoints = new Endpoints();
  if (size < 1) return 0;
  // First byte: which endpoint (bit 0) and the chunk size the bytes arrive in (1..128).
  const bool control = (data[0] & 1) != 0;
  const size_t chunk = 1 + (data[0] >> 1);
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  http::HttpLimits limits = control ? producers::ControlServerOptions(":0").limits : http::HttpLimits{};
  // Small limits so the fuzzer reaches them with small inputs.
  limits.max_target_bytes = 256;
  limits.max_header_bytes = 512;
  limits.max_body_bytes = 256;
  http::HttpConnection connection(control ? endpoints->control_handler : endpoints->metrics_handler, limits);
  while (!input.empty() && !connection.closing()) {
    connection.Receive(input.substr(0, chunk));
    input.remove_prefix(std::min(chunk, input.size()));
    while (std::optional<http::HttpOutput> out = connection.Next()) CheckResponse(*out);
  }
  // Whatever the replayer was told (seek, speed, pause), the next input starts from a known state.
  endpoints->replayer.Resume();
  endpoints->replayer.SetSpeed(1);
  return 0;
}
