#include "remote_write_flags.h"

#include "acmetrace/core/clock.h"
#include "acmetrace/core/log.h"
#include "acmetrace/remote_write/http_transport.h"
#include "acmetrace/remote_write/queue_metrics.h"

namespace acmetrace::apps {

void AddRemoteWriteFlags(CLI::App* cmd, KeyFlags& keys, RemoteWriteFlags& flags, const std::string& what, bool live) {
  cmd->add_option("--remote-write", flags.url, what + " [remote_write.*]");
  if (live) {
    keys.Option("--remote-write-interval", "remote_write.scrape_interval_ms",
                "milliseconds between two scrapes sent by remote write");
    flags.keys = &keys;
  }
  AddHttpClientFlags(cmd, flags.http, "with --remote-write: ");
}

std::optional<RemoteWriteSetup> CheckRemoteWrite(const RemoteWriteFlags& flags, const core::Config& config,
                                                 const char* command, remote_write::WriteMode mode) {
  RemoteWriteSetup setup;
  if (flags.url.empty()) {
    if (flags.http.any() || flags.interval_given()) {
      core::LogError(command, "--bearer-token-file, --basic-auth-file, --header, --ca-file and --remote-write-interval "
                              "need --remote-write (" +
                                  std::string(flags.http.any() ? flags.http.first_given() : "--remote-write-interval") +
                                  " given)");
      return std::nullopt;
    }
    return setup;
  }
  core::Result<scoring::ClientOptions> client = ClientOptionsFromFlags(flags.http);
  if (!client.ok()) {
    core::LogError(command, client.status().message());
    return std::nullopt;
  }
  setup.settings = remote_write::RemoteWriteSettingsFromConfig(config);
  client.value().timeout_ms = setup.settings.timeout_ms;
  if (auto probe = remote_write::HttpTransport::Create(flags.url, client.value()); !probe.ok()) {
    std::string why = probe.status().message();
    // The URL parser is score's, whose messages name its flag.
    if (constexpr std::string_view kScoreFlag = "--prometheus: "; why.rfind(kScoreFlag, 0) == 0) {
      why.erase(0, kScoreFlag.size());
    }
    core::LogError(command, "--remote-write: " + why);
    return std::nullopt;
  }
  setup.url = flags.url;
  setup.queue = setup.settings.Queue(mode);
  for (const core::Status& s : {setup.settings.Validate(mode), setup.queue.Validate()}) {
    if (!s.ok()) {
      core::LogError(command, s.message());
      return std::nullopt;
    }
  }
  setup.client = std::move(client).value();
  return setup;
}

std::unique_ptr<remote_write::WriteQueue> MakeWriteQueue(const RemoteWriteSetup& setup, remote_write::Sleeper& sleeper) {
  return std::make_unique<remote_write::WriteQueue>(
      setup.queue,
      [url = setup.url, client = setup.client]() -> std::unique_ptr<remote_write::WriteTransport> {
        return std::move(remote_write::HttpTransport::Create(url, client)).value();  // checked by CheckRemoteWrite
      },
      sleeper);
}

void ReportRemoteWrite(const char* command, int64_t series, const remote_write::QueueStats& q,
                       const std::vector<remote_write::RefusedSeries>& refused) {
  core::Logf(core::LogLevel::kInfo, command,
             "remote write: %lld series, %lld samples sent, %lld failed, %lld retried, %lld pending, %lld "
             "requests (%lld refused), %.1f MB sent, %lld shards",
             static_cast<long long>(series), static_cast<long long>(q.samples_sent),
             static_cast<long long>(q.samples_failed), static_cast<long long>(q.samples_retried),
             static_cast<long long>(q.samples_pending), static_cast<long long>(q.requests),
             static_cast<long long>(q.requests_rejected), static_cast<double>(q.bytes_sent) / 1e6,
             static_cast<long long>(q.shards));
  if (q.requests_rejected == 0) return;
  core::Logf(core::LogLevel::kError, command,
             "remote write: the receiver refused %lld requests (%lld samples of %lld series, not retried); the "
             "first: %s",
             static_cast<long long>(q.requests_rejected), static_cast<long long>(q.samples_failed),
             static_cast<long long>(q.series_refused), q.first_rejection.c_str());
  for (const remote_write::RefusedSeries& s : refused) {
    core::Logf(core::LogLevel::kError, command, "remote write: refused: %s (%lld samples, in %lld of the %lld requests)",
               remote_write::SeriesText(s.labels).c_str(), static_cast<long long>(s.samples),
               static_cast<long long>(s.requests), static_cast<long long>(q.requests_rejected));
  }
  if (q.series_refused > static_cast<int64_t>(refused.size())) {
    core::Logf(core::LogLevel::kError, command, "remote write: refused: ... and %lld more series",
               static_cast<long long>(q.series_refused - static_cast<int64_t>(refused.size())));
  }
}

std::unique_ptr<history::LiveRemoteWrite> StartLiveRemoteWrite(const RemoteWriteSetup& setup,
                                                               exporters::Exporter& exporter,
                                                               const std::string& instance, const char* command) {
  if (setup.url.empty()) return nullptr;
  static remote_write::RealSleeper sleeper;  // stateless; outlives every queue
  history::LiveRemoteWriteOptions options;
  options.interval_ms = setup.settings.scrape_interval_ms;
  options.batch_send_deadline_ms = setup.settings.batch_send_deadline_ms;
  options.targets.instance = instance;
  options.url = setup.url;
  options.on_failure = [command](const core::Status& s) {
    core::LogError(command, s.message() + "; remote write stopped, /metrics still served");
  };
  auto live = std::make_unique<history::LiveRemoteWrite>(exporter, MakeWriteQueue(setup, sleeper), options,
                                                         [] { return core::SystemNowMs(); });
  live->Start();
  core::Logf(core::LogLevel::kInfo, command, "remote write to %s: a scrape every %lld ms", setup.url.c_str(),
             static_cast<long long>(options.interval_ms));
  return live;
}

bool FinishLiveRemoteWrite(history::LiveRemoteWrite& live, const char* command) {
  const core::Status s = live.Finish();
  const remote_write::QueueStats q = live.Stats();
  core::Logf(core::LogLevel::kInfo, command, "remote write: %lld scrapes sent", static_cast<long long>(live.scrapes()));
  ReportRemoteWrite(command, live.series(), q, live.Refused(kRefusedSeriesNamed));
  if (!s.ok()) core::LogError(command, s.message());
  return s.ok() && q.samples_failed == 0;
}

std::string HostPortOf(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  const size_t end = url.find('/', start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace acmetrace::apps
