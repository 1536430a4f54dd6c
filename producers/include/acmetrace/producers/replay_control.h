// The replay's HTTP control endpoint: status as JSON, pause, resume, seek, speed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "acmetrace/core/status.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::producers {

/// Serves, on its own thread:
///   GET  /status                 {"trace_ms":..,"trace_time":..,"speed":..,"paused":..,"records_sent":..,"lag_ms":..}
///   POST /pause, POST /resume
///   POST /seek?t=T               T: unix seconds or ISO 8601 with offset (URL-encode '+' as %2B)
///   POST /speed?value=N|max
/// Thread-safe; the Replayer must outlive it.
class ReplayControlServer {
 public:
  explicit ReplayControlServer(Replayer& replayer);
  ~ReplayControlServer();
  ReplayControlServer(const ReplayControlServer&) = delete;
  ReplayControlServer& operator=(const ReplayControlServer&) = delete;

  /// Listens on "HOST:PORT" (port 0 picks a free one) and starts serving.
  core::Status Start(const std::string& address);
  /// The bound port (after Start).
  uint16_t port() const;
  void Stop();

  /// Handles one request (method, target) and returns (HTTP status, JSON body). Public for tests.
  std::pair<int, std::string> Handle(const std::string& method, const std::string& target);

 private:
  struct Impl;
  Replayer& replayer_;
  std::unique_ptr<Impl> impl_;
};

/// The status as the endpoint serves it.
std::string ReplayStatusJson(const ReplayStatus& status);

}  // namespace acmetrace::producers
