// The file transport: JSON lines in a directory, one file per partition (file.dir/TOPIC/N.jsonl),
// followed as they grow. A record is a framed line as stdout's; a stream marker is a line of its
// own, {"marker":"progress","trace_ts_ms":T}. Writers append; a reader's offsets are line numbers
// (so a restart resumes where a snapshot says).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/settings.h"
#include "acmetrace/core/stream_markers.h"
#include "acmetrace/pipeline/cluster_hash.h"
#include "acmetrace/pipeline/hops.h"

namespace acmetrace::pipeline {
namespace {

struct FileSettings {
  std::string dir;
  int32_t partitions = 1;
  int64_t progress_interval_ms = 60'000;
  int64_t idle_timeout_ms = 30'000;
  int64_t poll_ms = 20;
};

// The file.* keys: each once, with the FileSettings member it fills (default: the member's).
const core::Settings<FileSettings>& FileSettingsTable() {
  using S = FileSettings;
  static const core::Settings<S> settings =
      core::Settings<S>("file")
          .Text("dir", &S::dir, core::ConfigType::String(),
                "directory of the file transport: TOPIC/N.jsonl per partition (must be set to use it)")
          .Int("partitions", &S::partitions, 1, 1024, "files (partitions) per topic; a cluster's records all go to one of them")
          .Int("progress_interval_ms", &S::progress_interval_ms, 1, 86'400'000,
               "trace time between two rounds of progress markers of an ordered writer (the replay)")
          .Int("idle_timeout_ms", &S::idle_timeout_ms, 0, 86'400'000,
               "a file read to its end that grows no more for this long is reported idle (0 = never)")
          .Int("poll_ms", &S::poll_ms, 1, 10'000, "how often a reader at the end of its files looks for more");
  return settings;
}

void Declare(core::Config& config) { FileSettingsTable().Declare(config); }

FileSettings SettingsFrom(const core::Config& config) {
  FileSettings s = FileSettingsTable().Fill(config);
  // Any directory may be configured, none only while the transport is not used.
  if (s.dir.empty()) throw std::invalid_argument(config.Where("file.dir") + ": empty (the file transport's directory)");
  return s;
}

std::string PathOf(const FileSettings& s, std::string_view topic, int32_t n) {
  return s.dir + "/" + std::string(topic) + "/" + std::to_string(n) + ".jsonl";
}

core::Status MakeTopicDir(const FileSettings& s, std::string_view topic) {
  std::error_code ec;
  std::filesystem::create_directories(s.dir + "/" + std::string(topic), ec);
  if (ec) return core::Status::Error(s.dir + "/" + std::string(topic) + ": cannot create: " + ec.message());
  return core::Status::Ok();
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One topic's files, appended to by one writer: records go to the file of their cluster.
class FileSink : public core::RecordSink {
 public:
  FileSink(FileSettings settings, std::vector<std::string> topics, bool ordered)
      : settings_(std::move(settings)),
        topics_(std::move(topics)),
        progress_(std::vector<int32_t>(topics_.size(), settings_.partitions), ordered ? settings_.progress_interval_ms : 0) {}
  ~FileSink() override {
    for (File& f : files_) {
      if (f.fd >= 0) ::close(f.fd);
    }
  }

  core::Status Open() {
    for (const std::string& topic : topics_) {
      if (core::Status s = MakeTopicDir(settings_, topic); !s.ok()) return s;
      for (int32_t n = 0; n < settings_.partitions; ++n) {
        File f;
        f.path = PathOf(settings_, topic, n);
        f.fd = ::open(f.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (f.fd < 0) return core::Status::Error(f.path + ": cannot open: " + std::strerror(errno));
        files_.push_back(std::move(f));
      }
    }
    return core::Status::Ok();
  }

  core::Status Write(const core::Record& record) override {
    const std::string_view topic = core::TopicOf(record);
    size_t t = 0;
    while (t < topics_.size() && topics_[t] != topic) ++t;
    if (t == topics_.size()) return core::Status::Error("file transport: " + std::string(topic) + " is not a topic of this writer");
    const std::string_view cluster = std::visit([](const auto& r) -> std::string_view { return r.cluster; }, record);
    const int32_t p = static_cast<int32_t>(ClusterHash(cluster) % static_cast<uint32_t>(settings_.partitions));
    const int64_t ts = core::TimestampMsOf(record);
    if (progress_.DueBefore(ts)) {
      if (core::Status s = progress_.Round([&](size_t rt, int32_t rp) { return Marker(rt, rp, core::kProgressMarker, ts); });
          !s.ok()) {
        return s;
      }
    }
    progress_.Wrote(t, p, ts);
    last_ts_ = std::max(last_ts_, ts);
    if (clusters_.find(cluster) == clusters_.end()) clusters_.emplace(cluster);
    File& f = FileOf(t, p);
    core::AppendFramedLine(f.buffer, record);
    return f.buffer.size() >= kBufferBytes ? WriteOut(f) : core::Status::Ok();
  }

  core::Status Flush() override {
    for (File& f : files_) {
      if (core::Status s = WriteOut(f); !s.ok()) return s;
    }
    return core::Status::Ok();
  }

  core::Status Prepare(int64_t first_trace_ts_ms) override {
    if (!progress_.enabled() || first_trace_ts_ms == core::kNoTraceTs) return core::Status::Ok();
    if (core::Status s = progress_.Round([&](size_t t, int32_t p) {
          return Marker(t, p, core::kProgressMarker, first_trace_ts_ms);
        });
        !s.ok()) {
      return s;
    }
    return Flush();
  }

  // A round when the trace time has moved on by the progress interval, or the writer paused or resumed.
  core::Status Heartbeat(int64_t trace_ts_ms, bool paused) override {
    if (!progress_.enabled() || trace_ts_ms == core::kNoTraceTs) return core::Status::Ok();
    if (last_heartbeat_ms_ != core::kNoTraceTs && trace_ts_ms - last_heartbeat_ms_ < progress_.every_ms() &&
        paused == last_paused_) {
      return core::Status::Ok();
    }
    last_heartbeat_ms_ = trace_ts_ms;
    last_paused_ = paused;
    for (size_t t = 0; t < topics_.size(); ++t) {
      for (int32_t p = 0; p < settings_.partitions; ++p) {
        if (core::Status s = Marker(t, p, paused ? core::kPausedProgressMarker : core::kProgressMarker, trace_ts_ms);
            !s.ok()) {
          return s;
        }
      }
    }
    return Flush();
  }

  core::Status End(const std::vector<std::string>& clusters) override {
    const std::string marker =
        core::EndMarkerText(clusters.empty() ? std::vector<std::string>(clusters_.begin(), clusters_.end()) : clusters);
    for (size_t t = 0; t < topics_.size(); ++t) {
      for (int32_t p = 0; p < settings_.partitions; ++p) {
        if (core::Status s = Marker(t, p, marker, last_ts_); !s.ok()) return s;
      }
    }
    return Flush();
  }

 private:
  static constexpr size_t kBufferBytes = 256 * 1024;
  struct File {
    std::string path;
    int fd = -1;
    std::string buffer;
  };
  File& FileOf(size_t topic, int32_t partition) {
    return files_[topic * static_cast<size_t>(settings_.partitions) + static_cast<size_t>(partition)];
  }
  core::Status Marker(size_t topic, int32_t partition, std::string_view marker, int64_t ts) {
    core::AppendMarkerLine(FileOf(topic, partition).buffer, marker, ts);
    return core::Status::Ok();
  }
  // Whole lines only: a reader never sees half a line for long (it waits for the rest).
  static core::Status WriteOut(File& f) {
    size_t done = 0;
    while (done < f.buffer.size()) {
      const ssize_t n = ::write(f.fd, f.buffer.data() + done, f.buffer.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return core::Status::Error(f.path + ": write failed: " + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    f.buffer.clear();
    return core::Status::Ok();
  }

  FileSettings settings_;
  std::vector<std::string> topics_;
  core::ProgressMarkers progress_;
  std::vector<File> files_;
  std::set<std::string, std::less<>> clusters_;
  int64_t last_ts_ = core::kNoTraceTs;
  int64_t last_heartbeat_ms_ = core::kNoTraceTs;
  bool last_paused_ = false;
};

// Every file of some topics, each followed from a byte offset, merged by trace time: of the files
// that have a whole line ready, the one whose line is earliest goes first. Records come parsed
// (kRecord), markers as kProgress and kEnded, the end of a file as kCaughtUp, a file that stops
// growing as kIdle. Not thread-safe.
class FileInput : public core::RecordInput {
 public:
  FileInput(FileSettings settings, const std::vector<std::string>& topics) : settings_(std::move(settings)) {
    for (const std::string& topic : topics) {
      for (int32_t n = 0; n < settings_.partitions; ++n) {
        partitions_.push_back(
            core::InputPartition{topic + "/" + std::to_string(n), topic, PathOf(settings_, topic, n), n});
      }
    }
    parts_.resize(partitions_.size());
  }
  ~FileInput() override {
    for (Part& part : parts_) {
      if (part.fd >= 0) ::close(part.fd);
    }
  }

  core::Status Open(bool at_end) {
    for (size_t i = 0; i < parts_.size(); ++i) {
      if (core::Status s = MakeTopicDir(settings_, partitions_[i].topic); !s.ok()) return s;
      Part& part = parts_[i];
      part.fd = ::open(partitions_[i].where.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
      if (part.fd < 0) return core::Status::Error(partitions_[i].where + ": cannot open: " + std::strerror(errno));
      if (at_end) {
        if (core::Status s = SeekPart(i, INT64_MAX); !s.ok()) return s;
      }
    }
    return core::Status::Ok();
  }

  const std::vector<core::InputPartition>& partitions() const override { return partitions_; }

  core::Result<core::InputItem> Next(int timeout_ms) override {
    const int64_t deadline = SteadyMs() + timeout_ms;
    for (;;) {
      int best = -1;
      for (size_t i = 0; i < parts_.size(); ++i) {
        Part& part = parts_[i];
        if (part.paused) continue;
        if (!part.has_head) {
          core::Result<bool> read = ReadHead(i);
          if (!read.ok()) return read.status();
        }
        if (part.has_head && (best < 0 || part.head_order < parts_[static_cast<size_t>(best)].head_order)) {
          best = static_cast<int>(i);
        }
      }
      if (best >= 0) return Take(static_cast<size_t>(best));
      // Nothing ready: each file at its end is reported caught up once, and idle once it stays so.
      const int64_t now = SteadyMs();
      for (size_t i = 0; i < parts_.size(); ++i) {
        Part& part = parts_[i];
        if (part.paused) continue;
        core::InputItem item;
        item.partition = static_cast<int>(i);
        if (part.caught_up_since < 0) {
          part.caught_up_since = now;
          item.kind = core::InputItem::Kind::kCaughtUp;
          return item;
        }
        if (!part.idle_reported && settings_.idle_timeout_ms > 0 && now - part.caught_up_since >= settings_.idle_timeout_ms) {
          part.idle_reported = true;
          item.kind = core::InputItem::Kind::kIdle;
          return item;
        }
      }
      if (cancelled_ || now >= deadline) return core::InputItem{};
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(settings_.poll_ms, deadline - now)));
    }
  }

  // Empty: nothing is read until the next Seek (as a group's input before its first assignment).
  core::Status Seek(const std::vector<int64_t>& next_offsets) override {
    for (size_t i = 0; i < parts_.size(); ++i) {
      parts_[i].paused = next_offsets.empty();
      if (next_offsets.empty()) continue;
      const int64_t at = i < next_offsets.size() && next_offsets[i] >= 0 ? next_offsets[i] : 0;
      if (core::Status s = SeekPart(i, at); !s.ok()) return s;
    }
    return core::Status::Ok();
  }

  core::Status Pause(int partition) override {
    if (partition >= 0 && static_cast<size_t>(partition) < parts_.size()) parts_[static_cast<size_t>(partition)].paused = true;
    return core::Status::Ok();
  }

  void Cancel() override { cancelled_ = true; }

 private:
  struct Part {
    int fd = -1;
    std::string buffer;      // read and not yet taken from buffer[start]
    size_t start = 0;
    int64_t line_no = 0;     // lines taken (the offset of the next one)
    bool paused = false;
    bool has_head = false;   // the next line, read and classified
    core::InputItem head;
    int64_t head_order = 0;  // its trace time, to merge by (unreadable lines first)
    core::Record record;
    std::string text;        // a marker's text (clusters point into it)
    std::string trace_ts;    // a marker's trace time, as written
    std::string error;
    int64_t caught_up_since = -1;
    bool idle_reported = false;
  };

  // Positions the partition at its line number `line` (0 = the first; past the end: after its
  // last whole line). Offsets are line numbers: the next offset is the offset plus one, as on
  // every transport.
  core::Status SeekPart(size_t i, int64_t line) {
    Part& part = parts_[i];
    if (::lseek(part.fd, 0, SEEK_SET) < 0) return core::Status::Error(partitions_[i].where + ": " + std::strerror(errno));
    int64_t lines = 0;
    int64_t position = 0;  // after the last newline counted
    int64_t read_so_far = 0;
    char buf[65536];
    while (lines < line) {
      const ssize_t n = ::read(part.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return core::Status::Error("reading " + partitions_[i].where + ": " + std::strerror(errno));
      if (n == 0) break;
      for (ssize_t k = 0; k < n && lines < line; ++k) {
        if (buf[k] != '\n') continue;
        ++lines;
        position = read_so_far + k + 1;
      }
      read_so_far += n;
    }
    if (::lseek(part.fd, position, SEEK_SET) < 0) return core::Status::Error(partitions_[i].where + ": " + std::strerror(errno));
    part.buffer.clear();
    part.start = 0;
    part.line_no = lines;
    part.has_head = false;
    part.caught_up_since = -1;
    part.idle_reported = false;
    return core::Status::Ok();
  }

  // Reads the partition's next whole line into its head (empty lines and markers of a later
  // version skipped); false when none is there yet.
  core::Result<bool> ReadHead(size_t i) {
    Part& part = parts_[i];
    for (;;) {
      core::Result<std::string_view> line = NextLine(i);
      if (!line.ok()) return line.status();
      if (line.value().data() == nullptr) return false;  // at its end (a line being written waits for the rest)
      if (line.value().empty()) continue;
      if (Classify(i, line.value())) break;
    }
    // Markers at the time of a record go before it (they say nothing is earlier); what has no time
    // goes at once (an unreadable line is reported where it is, an end marker of an empty stream).
    part.head_order = part.head.ts_ms == core::InputItem::kNoTs ? INT64_MIN : part.head.ts_ms;
    part.has_head = true;
    return true;
  }

  // The partition's next whole line (a null view at its end), its place noted in the head.
  core::Result<std::string_view> NextLine(size_t i) {
    Part& part = parts_[i];
    size_t nl = part.buffer.find('\n', part.start);
    while (nl == std::string::npos) {
      if (part.start > 0) {
        part.buffer.erase(0, part.start);
        part.start = 0;
      }
      const size_t had = part.buffer.size();
      part.buffer.resize(had + 65536);
      const ssize_t n = ::read(part.fd, part.buffer.data() + had, 65536);
      part.buffer.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return core::Status::Error("reading " + partitions_[i].where + ": " + std::strerror(errno));
      if (n == 0) return std::string_view();
      nl = part.buffer.find('\n', had);
    }
    part.head = core::InputItem{};
    part.head.partition = static_cast<int>(i);
    part.head.offset = part.line_no;
    part.head.line_no = ++part.line_no;
    const std::string_view line(part.buffer.data() + part.start, nl - part.start);
    part.start = nl + 1;
    part.caught_up_since = -1;
    part.idle_reported = false;
    return line;
  }

  // Makes the line the partition's head item; false for a line to skip (a later version's marker).
  bool Classify(size_t i, std::string_view line) {
    Part& part = parts_[i];
    core::InputItem& item = part.head;
    if (core::ReadMarkerLine(line, part.text, part.trace_ts)) {
      const std::string_view trace_ts = part.trace_ts;
      const core::StreamMarker m = core::ReadStreamMarker(part.text, trace_ts);
      item.ts_ms = m.trace_ts_ms;
      switch (m.kind) {
        case core::StreamMarker::Kind::kProgress:
          item.kind = core::InputItem::Kind::kProgress;
          item.paused = m.paused;
          return true;
        case core::StreamMarker::Kind::kEnd:
          item.kind = core::InputItem::Kind::kEnded;
          item.clusters = m.clusters;
          return true;
        case core::StreamMarker::Kind::kOtherMarker:
          return false;
        case core::StreamMarker::Kind::kRecord:
        case core::StreamMarker::Kind::kInvalid:
          part.error = m.kind == core::StreamMarker::Kind::kInvalid ? m.error : "a marker line without a marker";
          item.kind = core::InputItem::Kind::kUnreadable;
          item.ts_ms = core::InputItem::kNoTs;
          item.error = part.error;
          return true;
      }
    }
    if (core::Status s = parser_.ParseFramedLine(line, part.record); s.ok()) {
      item.kind = core::InputItem::Kind::kRecord;
      item.record = &part.record;
      item.ts_ms = core::TimestampMsOf(part.record);
    } else {
      part.error = s.message();
      item.kind = core::InputItem::Kind::kUnreadable;
      item.error = part.error;
    }
    return true;
  }

  core::InputItem Take(size_t i) {
    Part& part = parts_[i];
    part.has_head = false;
    return part.head;
  }

  FileSettings settings_;
  std::vector<core::InputPartition> partitions_;
  std::vector<Part> parts_;
  core::RecordParser parser_;
  std::atomic<bool> cancelled_{false};
};

class FileTransport : public Transport {
 public:
  explicit FileTransport(FileSettings settings) : settings_(std::move(settings)) {}
  core::Result<std::unique_ptr<core::RecordInput>> Reader(const InputHop& hop) override {
    auto input = std::make_unique<FileInput>(settings_, hop.topics);
    if (core::Status s = input->Open(hop.start == InputHop::Start::kEnd); !s.ok()) return s;
    return std::unique_ptr<core::RecordInput>(std::move(input));
  }
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const OutputHop& hop) override {
    auto sink = std::make_unique<FileSink>(settings_, hop.topics, hop.ordered);
    if (core::Status s = sink->Open(); !s.ok()) return s;
    return std::unique_ptr<core::RecordSink>(std::move(sink));
  }

 private:
  FileSettings settings_;
};

core::Result<std::unique_ptr<Transport>> Make(const core::Config& config, std::FILE*) {
  return std::unique_ptr<Transport>(std::make_unique<FileTransport>(SettingsFrom(config)));
}

}  // namespace

extern const TransportKind kFileTransport;
const TransportKind kFileTransport{"file", "file", "file",
                                   "JSON lines in a directory, one file per partition (file.dir/TOPIC/N.jsonl), followed as they grow",
                                   /*in_one_process=*/true, /*can_seek=*/true, &Declare, &Make};

}  // namespace acmetrace::pipeline
