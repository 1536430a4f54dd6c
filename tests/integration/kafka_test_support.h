// Helpers for the kafka-labelled integration tests: commands, brokers, framed lines, test data.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace acmetrace::kafka::testing {

/// The acmetrace binary: $ACMETRACE_BINARY if set (e.g. a copy while build/ is being rebuilt), else build's.
inline const char* Binary() {
  const char* env = std::getenv("ACMETRACE_BINARY");
  return env != nullptr && *env != '\0' ? env : ACMETRACE_BINARY;
}
inline const char* SourceDir() { return ACMETRACE_SOURCE_DIR; }
inline const char* Fixtures() { return ACMETRACE_FIXTURES; }

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs command with /bin/sh, capturing stdout and stderr.
CommandResult RunCommand(const std::string& command);

/// A command running in the background (/bin/sh -c), stdout and stderr to files.
class BackgroundCommand {
 public:
  BackgroundCommand(const std::string& command, const std::string& out_path, const std::string& err_path);
  ~BackgroundCommand();  // kills it if still running
  /// Waits for it to end; the exit code (128+signal if killed).
  int Wait();
  /// Sends it signal (SIGTERM: ask it to stop cleanly).
  void Signal(int signal);

 private:
  pid_t pid_ = -1;
};

/// The broker the CTest fixture started (kafka_broker.sh), "" if none.
std::string SharedBroker();

/// A broker of the test's own, on a free port, reset (stopped and wiped) by the destructor.
class OwnBroker {
 public:
  OwnBroker();
  ~OwnBroker();
  const std::string& bootstrap() const { return bootstrap_; }
  int port() const { return port_; }
  /// scripts/kafka-local stop / start on this broker's port; true on success.
  bool Stop();
  bool Start();

 private:
  std::string bootstrap_;
  int port_ = 0;
};

/// The whole content of a file ("" if it cannot be read).
std::string ReadFile(const std::string& path);

/// A fresh empty directory under the test temp dir, removed after the tests if they all passed.
std::string FreshDir(const std::string& name);

/// A record as the stdio framing shows it, or as read back from Kafka.
struct Framed {
  std::string topic;
  std::string key;
  std::string value;
  int64_t timestamp_ms = 0;
  int64_t trace_ts_ms = 0;       // read back: FramedRecord::trace_ts_ms (the header, else the value's time)
  std::string trace_ts_header;   // read back: the trace_ts_ms header as it came, "" if absent
  bool operator<(const Framed& o) const {
    return std::tie(topic, key, value) < std::tie(o.topic, o.key, o.value);
  }
  bool operator==(const Framed& o) const { return topic == o.topic && key == o.key && value == o.value; }
};

/// Parses `acmetrace replay --sink stdout` output: {"topic":..,"key":..,"value":{..}} per line.
std::vector<Framed> ParseFramedLines(const std::string& text);

/// Reads every record of topics to their end with a fresh consumer group (acmetrace::kafka's
/// KafkaSource, offsets marked processed as it goes). Fails the test on error or after timeout_ms.
std::vector<Framed> ConsumeAll(const std::string& brokers, const std::vector<std::string>& topics,
                               const std::string& group, int timeout_ms = 120'000);

/// The "ts_ms" number of a record's JSON value (0 if none).
int64_t TsMsOf(const std::string& json);

/// The integer after `label` in text (e.g. "records produced" in the replay's summary line), -1 if absent.
int64_t NumberBefore(const std::string& text, const std::string& label);

/// Writes a Seren-format release under dir: `jobs` jobs and `nodes` nodes of 8 GPUs sampled every
/// 15 s over `hours` hours from 2023-03-01 00:00 +08:00. Deterministic.
void WriteSyntheticRelease(const std::string& dir, int jobs, int nodes, int hours);

/// Wall-clock milliseconds since the epoch.
int64_t UnixNowMs();

}  // namespace acmetrace::kafka::testing
