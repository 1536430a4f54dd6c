// --remote-write URL and its credentials, shared by backfill, run and export: flags, checks before
// any work, the queue, the end-of-run report.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "acmetrace/core/config.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/history/live_remote_write.h"
#include "acmetrace/remote_write/remote_write_config.h"
#include "acmetrace/remote_write/write_queue.h"
#include "acmetrace/scoring/range_query.h"
#include "commands.h"
#include "key_flags.h"

namespace acmetrace::apps {

/// --remote-write URL and the HTTP client flags (empty: not given).
struct RemoteWriteFlags {
  std::string url;
  HttpClientFlags http;
  const KeyFlags* keys = nullptr;  // where live commands' --remote-write-interval is
  bool interval_given() const { return keys != nullptr && keys->given("--remote-write-interval"); }
};

/// Declares --remote-write (help: what) and the HTTP client flags; live adds --remote-write-interval
/// to keys (it sets remote_write.scrape_interval_ms).
void AddRemoteWriteFlags(CLI::App* cmd, KeyFlags& keys, RemoteWriteFlags& flags, const std::string& what, bool live);

/// A checked remote write setup: the receiver's URL, the client's credentials, the queue's settings.
struct RemoteWriteSetup {
  std::string url;
  scoring::ClientOptions client;
  remote_write::QueueOptions queue;            // settings.Queue(the command's mode)
  remote_write::RemoteWriteSettings settings;  // the remote_write.* keys the queue came from
};

/// Checks the flags and the remote_write.* keys before any work (URL, credential files, queue
/// numbers for mode's command, the HTTP flags without --remote-write). Logs one line under command
/// and returns nullopt on a usage error; an empty setup (url "") when --remote-write is not given.
std::optional<RemoteWriteSetup> CheckRemoteWrite(const RemoteWriteFlags& flags, const core::Config& config,
                                                 const char* command, remote_write::WriteMode mode);

/// The queue and its HTTP senders (start it once the signal mask its threads inherit is set).
std::unique_ptr<remote_write::WriteQueue> MakeWriteQueue(const RemoteWriteSetup& setup, remote_write::Sleeper& sleeper);

/// The last lines: "remote write: N series, ... sent, ... failed, ..." and, if the receiver refused
/// requests, how many and the series in them (those in the most refused requests first).
void ReportRemoteWrite(const char* command, int64_t series, const remote_write::QueueStats& q,
                       const std::vector<remote_write::RefusedSeries>& refused);

/// How many refused series the report names (all are counted).
inline constexpr size_t kRefusedSeriesNamed = 10;

/// run/export --remote-write: scrapes exporter every remote_write.scrape_interval_ms and sends the
/// samples, from now on (the signal mask set); instance is the address the exporter serves on (its
/// own target's label). Null without --remote-write. Finish it (FinishLiveRemoteWrite) after the
/// pipeline ends and before the server stops; destroy it after the server stops.
std::unique_ptr<history::LiveRemoteWrite> StartLiveRemoteWrite(const RemoteWriteSetup& setup,
                                                               exporters::Exporter& exporter,
                                                               const std::string& instance, const char* command);

/// The last scrape, the queue flushed, the report; false when a sample was not delivered.
bool FinishLiveRemoteWrite(history::LiveRemoteWrite& live, const char* command);

/// HOST:PORT of a URL like http://HOST:PORT/metrics.
std::string HostPortOf(const std::string& url);

}  // namespace acmetrace::apps
