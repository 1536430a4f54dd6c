// Replayer: pacing against one absolute anchor (never accumulated sleeps), so there is no drift;
// every control action re-anchors the ReplayClock and interrupts the sleep.
#include "acmetrace/producers/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "acmetrace/core/log.h"
#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {

std::string AcceptedSpeedRange() {
  char text[64];
  std::snprintf(text, sizeof text, "max or a number in [%.15g, %.15g]", kMinSpeed, kMaxSpeed);
  return text;
}

core::ConfigType SpeedType() {
  return core::ConfigType::Custom(
      AcceptedSpeedRange(),
      [](std::string_view v) -> std::optional<std::string> {
        if (!ParseAcceptedSpeed(v)) return "not " + AcceptedSpeedRange() + ": " + core::QuoteConfigValue(v);
        return std::nullopt;
      },
      {"abc", "0", "-1", "0.0009", "1000000001", "inf", "nan", "Max", "1e-15", "1e308"},
      {"max", "0.001", "60", "1000000000"});
}

std::optional<double> ParseSpeed(std::string_view text) {
  if (text == "max") return 0.0;
  std::optional<double> v = core::ParseDouble(text);
  if (!v || !(*v > 0) || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::optional<double> ParseAcceptedSpeed(std::string_view text) {
  const std::optional<double> speed = ParseSpeed(text);
  if (!speed || (*speed != 0 && (*speed < kMinSpeed || *speed > kMaxSpeed))) return std::nullopt;
  return speed;
}

std::optional<std::pair<uint32_t, uint32_t>> ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::optional<int64_t> i = core::ParseInteger(text.substr(0, slash));
  std::optional<int64_t> n = core::ParseInteger(text.substr(slash + 1));
  if (!i || !n || *n < 1 || *i < 0 || *i >= *n || *n > 1'000'000) return std::nullopt;
  return std::make_pair(static_cast<uint32_t>(*i), static_cast<uint32_t>(*n));
}

bool InShard(const core::Record& record, uint32_t index, uint32_t count) {
  if (count <= 1) return true;
  thread_local std::string key;
  key.clear();
  core::AppendKey(key, record);
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a: stable across runs, machines and builds
  for (char c : key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash % count == index;
}

ReplayProgress ComputeReplayProgress(int64_t first_ms, std::optional<int64_t> last_ms, int64_t trace_ms,
                                     double speed, bool paused, int64_t elapsed_wall_ms) {
  ReplayProgress p;
  if (!last_ms) return p;
  const int64_t window_ms = *last_ms - first_ms;
  const int64_t done_ms = trace_ms - first_ms;
  // The end may be an estimate (the job trace's last rows), so a replay can pass it: stay at 100.
  const double percent =
      window_ms <= 0 ? 100.0 : 100.0 * static_cast<double>(done_ms) / static_cast<double>(window_ms);
  p.percent = std::clamp(percent, 0.0, 100.0);
  const int64_t left_ms = std::max<int64_t>(0, *last_ms - trace_ms);
  if (paused) return p;
  if (left_ms == 0) {
    p.eta_ms = 0;
  } else if (speed > 0) {
    p.eta_ms = std::llround(static_cast<double>(left_ms) / speed);
  } else if (elapsed_wall_ms > 0 && done_ms > 0) {  // max speed: at the rate seen so far
    p.eta_ms = std::llround(static_cast<double>(left_ms) * static_cast<double>(elapsed_wall_ms) /
                            static_cast<double>(done_ms));
  }
  return p;
}

std::string FormatDurationMs(int64_t ms) {
  const int64_t s = std::max<int64_t>(0, (ms + 500) / 1000);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

Replayer::Replayer(RecordSource& source, core::RecordSink& sink, core::Clock& clock, core::InputErrors& errors,
                   ReplayOptions options)
    : source_(&source), sink_(sink), clock_(clock), errors_(errors), options_(options), replay_clock_(options.speed) {}

Replayer::Replayer(SourceFactory factory, TimeRange range, core::RecordSink& sink, core::Clock& clock,
                   core::InputErrors& errors, ReplayOptions options)
    : factory_(std::move(factory)),
      range_(range),
      sink_(sink),
      clock_(clock),
      errors_(errors),
      options_(options),
      replay_clock_(options.speed) {}

core::Status Replayer::Reopen(TimeRange range) {
  core::Result<std::unique_ptr<RecordSource>> source = factory_(range);
  if (!source.ok()) return source.status();
  owned_source_ = std::move(source).value();
  source_ = owned_source_.get();
  return core::Status::Ok();
}

void Replayer::Pause() {
  control_dirty_ = true;
  replay_clock_.Pause(clock_.NowMs());
  clock_.Interrupt();
}

void Replayer::Resume() {
  control_dirty_ = true;
  replay_clock_.Resume(clock_.NowMs());
  clock_.Interrupt();
}

void Replayer::SetSpeed(double speed) {
  control_dirty_ = true;
  replay_clock_.SetSpeed(speed, clock_.NowMs());
  clock_.Interrupt();
}

core::Status Replayer::Seek(int64_t trace_ms) {
  if (!factory_) return core::Status::Error("seek needs a replay over a data directory");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seek_to_ = trace_ms;
  }
  control_dirty_ = true;
  clock_.Interrupt();
  return core::Status::Ok();
}

void Replayer::Stop() {
  stop_ = true;
  clock_.Interrupt();
}

ReplayStatus Replayer::status() const {
  ReplayStatus s;
  const int64_t now = clock_.NowMs();
  std::lock_guard<std::mutex> lock(mutex_);
  s.trace_ms = stats_.last_ts_ms;
  s.records = stats_.total;
  s.running = running_;
  s.max_lateness_ms = stats_.max_lateness_ms;
  s.speed = replay_clock_.speed();
  s.paused = replay_clock_.paused();
  s.window_first_ms = window_first_ms_.value_or(0);
  s.window_last_ms = span_.last_ms.value_or(0);
  if (window_first_ms_ && s.records > 0) {
    // Waiting for the next record, everything due is out: the replay is where its clock is (a week of sparse
    // job events moves on between records). Otherwise it is at the last record sent.
    int64_t at_ms = progress_trace_ms_;
    if (waiting_ && replay_clock_.started() && !s.paused) {
      at_ms = std::max(at_ms, replay_clock_.TraceNowMs(now) - loop_offset_ms_);
    }
    s.progress = ComputeReplayProgress(*window_first_ms_, span_.last_ms, at_ms, s.speed, s.paused, now - wall0_ms_);
    s.progress.at_ms = at_ms;
  }
  if (replay_clock_.started()) {
    s.clock_trace_ms = replay_clock_.TraceNowMs(now);
    // Behind schedule: the last record left late, or the one being handed over (a sink applying
    // backpressure) is overdue.
    if (s.speed > 0 && !s.paused) {
      s.lag_ms = std::max<int64_t>({0, last_lateness_ms_, due_now_ms_ >= 0 ? now - due_now_ms_ : 0});
    }
  }
  return s;
}

bool Replayer::WaitUntilDue(int64_t ts_ms, int64_t& due_ms) {
  for (;;) {
    if (stop_) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (seek_to_) return false;
    }
    std::optional<int64_t> due = replay_clock_.DueWallMs(ts_ms);
    const int64_t now = clock_.NowMs();
    if (due && *due <= now) {
      due_ms = *due;
      return true;
    }
    if (unsent_) {  // about to wait: what was sent goes out first, then the clock is read again
      SendBeforeWait();
      if (!send_status_.ok()) return false;
      continue;
    }
    HeartbeatIfDue(now, ts_ms);
    if (!send_status_.ok()) return false;
    // Paused: sleep until a control action interrupts. Either way wake for the next progress line
    // and the next heartbeat.
    int64_t wake_ms = due ? *due : now + 3'600'000;
    if (progress_interval_ms_ > 0) wake_ms = std::min(wake_ms, std::max(now, next_progress_ms_));
    if (options_.heartbeat_interval_ms > 0) wake_ms = std::min(wake_ms, std::max(now, next_heartbeat_ms_));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = true;
    }
    clock_.SleepUntilMs(wake_ms);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = false;
    }
    if (progress_interval_ms_ > 0) {
      const int64_t woke_ms = clock_.NowMs();
      if (woke_ms >= next_progress_ms_) {
        Progress(woke_ms, false, /*waiting=*/true);
        next_progress_ms_ = woke_ms + progress_interval_ms_;
      }
    }
  }
}

void Replayer::HeartbeatIfDue(int64_t now_ms, int64_t ts_ms) {
  if (options_.heartbeat_interval_ms <= 0 || now_ms < next_heartbeat_ms_ || !replay_clock_.started()) return;
  next_heartbeat_ms_ = now_ms + options_.heartbeat_interval_ms;
  // Records come in trace-time order: nothing before the next record (ts_ms) is still to come, nor,
  // while the clock runs, before its position. Paused, it says no more than the last record sent
  // did (readers are then exactly where they were when the replay paused; a --pause-at state is the
  // state at that point), and only that it is alive.
  const bool paused = replay_clock_.paused();
  int64_t at_ms = std::min(ts_ms, replay_clock_.TraceNowMs(now_ms));
  if (paused) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats_.total > 0) at_ms = std::min(ts_ms, stats_.last_ts_ms);
  }
  send_status_ = sink_.Heartbeat(at_ms, paused);
}

void Replayer::SendBeforeWait() {
  unsent_ = false;
  send_status_ = sink_.Send();
}

void Replayer::Progress(int64_t now_ms, bool final, bool waiting) {
  if (options_.progress_out == nullptr) return;
  ReplayStatus s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_ = waiting;  // status() takes the clock's position while the replay waits
  }
  s = status();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_ = false;
  }
  const int64_t elapsed = now_ms - wall0_ms_;
  const double rate = elapsed > 0 ? 1000.0 * static_cast<double>(s.records) / static_cast<double>(elapsed) : 0.0;
  const std::string trace_time = s.records > 0 ? core::FormatIsoTime(s.progress.at_ms, 0) : "-";
  char speed[32];
  if (s.speed > 0) {
    std::snprintf(speed, sizeof(speed), "x%g", s.speed);
  } else {
    std::snprintf(speed, sizeof(speed), "max");
  }
  // Percent of the window's trace time (not of bytes read: the readers run ahead of the replay).
  char percent[16] = "-";
  if (s.progress.percent) std::snprintf(percent, sizeof(percent), "%.1f%%", *s.progress.percent);
  const std::string eta = s.paused                ? "paused"
                          : s.progress.eta_ms    ? FormatDurationMs(*s.progress.eta_ms)
                                                 : "-";
  char line[512];
  std::snprintf(line, sizeof(line), "trace %s  %s  ETA %s  %lld records  %.0f records/s  speed %s  lag %.1f s",
                trace_time.c_str(), percent, eta.c_str(), static_cast<long long>(s.records), rate, speed,
                static_cast<double>(s.lag_ms) / 1000.0);
  if (options_.progress_tty && core::CurrentLogFormat() == core::LogFormat::kText) {
    // A status line redrawn in place on a terminal, not a log line; its last state stays on screen.
    std::fprintf(options_.progress_out, "\r\033[Kreplay: %s%s", line, final ? "\n" : "");
    std::fflush(options_.progress_out);
  } else {
    core::LogTo(options_.progress_out, core::LogLevel::kInfo, "replay", line);
  }
}

core::Result<ReplayStats> Replayer::Run() {
  if (factory_) {
    if (core::Status s = Reopen(range_); !s.ok()) return s;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);  // status() reads these from other threads
    span_ = source_->span();
    window_first_ms_ = span_.first_ms ? span_.first_ms : span_.pace_from_ms;
    wall0_ms_ = options_.start_at_ms.value_or(clock_.NowMs());
  }
  while (!stop_ && clock_.NowMs() < wall0_ms_) clock_.SleepUntilMs(wall0_ms_);
  const int64_t interval =
      options_.progress_out == nullptr ? 0 : options_.progress_tty ? 250 : options_.progress_interval_ms;
  progress_interval_ms_ = interval;
  next_progress_ms_ = wall0_ms_ + interval;
  int64_t per_kind[std::variant_size_v<core::Record>] = {};
  int64_t first_ts_ms = std::numeric_limits<int64_t>::min();
  int64_t loop_offset_ms = 0;
  int64_t pass_first_ms = 0, pass_last_ms = 0;
  bool pass_started = false;
  core::Record shifted;
  core::Status failure = core::Status::Ok();

  // Control actions set control_dirty_; only then does the loop look at seek and speed again, so
  // an uncontrolled max-speed replay pays no lock or clock read per record.
  bool max_speed = false;
  bool clock_started = false;
  bool paused_at_pause_point = false;
  int64_t pending = 0;  // records sent but not yet published to stats_ (status() readers)
  int64_t pending_last_ts = std::numeric_limits<int64_t>::min();
  int64_t pending_raw_ts = 0;  // trace time of the last record sent, without the loop offset
  auto publish = [&] {
    if (pending == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.total += pending;
    stats_.last_ts_ms = std::max(stats_.last_ts_ms, pending_last_ts);
    progress_trace_ms_ = pending_raw_ts;
    if (!window_first_ms_) window_first_ms_ = stats_.first_ts_ms;
    pending = 0;
  };
  while (!stop_) {
    // A load first: an exchange is a locked instruction, too dear for every record.
    if (control_dirty_.load(std::memory_order_relaxed) && control_dirty_.exchange(false)) {
      std::optional<int64_t> seek;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seek.swap(seek_to_);
      }
      if (seek) {
        TimeRange range = range_;
        range.from_ms = std::max(range_.from_ms, *seek);
        if (core::Status s = Reopen(range); !s.ok()) {
          failure = s;
          break;
        }
        loop_offset_ms = 0;
        pass_started = false;
        replay_clock_.Seek(*seek, clock_.NowMs());
        std::lock_guard<std::mutex> lock(mutex_);
        loop_offset_ms_ = 0;
      }
      max_speed = replay_clock_.speed() <= 0 && !replay_clock_.paused();
    }
    const core::Record* record = source_->Next();
    if (record == nullptr) {
      if (core::Status s = source_->status(); !s.ok()) {
        failure = s;
        break;
      }
      if (!options_.loop || !factory_ || !pass_started) break;
      if (core::Status s = Reopen(range_); !s.ok()) {
        failure = s;
        break;
      }
      loop_offset_ms += pass_last_ms - pass_first_ms + options_.loop_gap_ms;
      pass_started = false;
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.loops;
      loop_offset_ms_ = loop_offset_ms;
      continue;
    }
    const int64_t raw_ts = core::TimestampMsOf(*record);
    // Before the telemetry's first sample (the jobs pending or running when it begins): out at once.
    const bool lead_in = span_.pace_from_ms && raw_ts < *span_.pace_from_ms;
    if (!pass_started) {
      pass_started = true;
      pass_first_ms = lead_in ? *span_.pace_from_ms : raw_ts;
    }
    pass_last_ms = std::max(pass_last_ms, raw_ts);
    if (!InShard(*record, options_.shard_index, options_.shard_count)) continue;
    const int64_t ts = raw_ts + loop_offset_ms;
    if (loop_offset_ms != 0) {
      shifted = *record;
      std::visit([ts](auto& r) { r.ts_ms = ts; }, shifted);
      record = &shifted;
    }
    if (!clock_started) {
      // The schedule starts when the first record is ready (opening the files and filling the job
      // reorder buffer take a moment) and the sink can deliver it at once, or at --start-at for
      // replayers in lockstep.
      if (core::Status s = sink_.Prepare(ts); !s.ok()) {
        failure = s;
        break;
      }
      replay_clock_.Start(options_.start_at_ms ? wall0_ms_ : clock_.NowMs(),
                          lead_in ? *span_.pace_from_ms + loop_offset_ms : ts);
      clock_started = true;
    }
    if (options_.pause_at_ms && !paused_at_pause_point && ts > *options_.pause_at_ms) {
      // Everything up to the pause point is out; this record waits like any record of a paused replay.
      paused_at_pause_point = true;
      Pause();
      max_speed = false;
    }
    int64_t due = 0;
    int64_t sent_ms = 0;
    const bool paced = !max_speed && !lead_in;
    if (paced) {
      publish();  // a paced replay is slow enough to keep status() exact
      if (!WaitUntilDue(ts, due)) {
        if (!send_status_.ok()) {
          failure = send_status_;
          break;
        }
        continue;  // stop, or a seek: handled at the top
      }
      sent_ms = clock_.NowMs();  // lateness: when the record is handed over
      std::lock_guard<std::mutex> lock(mutex_);
      due_now_ms_ = due;
    }
    if (core::Status s = sink_.Write(*record); !s.ok()) {
      failure = s;
      break;
    }
    unsent_ = true;
    ++per_kind[record->index()];
    if (first_ts_ms == std::numeric_limits<int64_t>::min()) {
      first_ts_ms = ts;
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.first_ts_ms = ts;
    }
    ++pending;
    pending_last_ts = std::max(pending_last_ts, ts);
    pending_raw_ts = raw_ts;
    if (paced) {
      const double speed = replay_clock_.speed();
      publish();
      std::lock_guard<std::mutex> lock(mutex_);
      due_now_ms_ = -1;
      if (speed > 0) {
        last_lateness_ms_ = std::max<int64_t>(0, sent_ms - due);
        stats_.max_lateness_ms = std::max(stats_.max_lateness_ms, sent_ms - due);
      }
    }
    if (errors_.must_stop()) break;
    if ((pending & 1023) == 0 || !max_speed) {
      publish();
      const int64_t now = clock_.NowMs();
      if (interval > 0 && now >= next_progress_ms_) {
        Progress(now, false);
        next_progress_ms_ = now + interval;
      }
    }
  }
  publish();
  // The end of the stream is time moving on: readers learn that the replay reached its last
  // record's time even where no record of theirs came near it (the telemetry stops hours before the
  // last job ends).
  if (failure.ok() && !stop_ && clock_started) {
    int64_t last_ms = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last_ms = stats_.last_ts_ms;
    }
    failure = sink_.Heartbeat(last_ms, false);
  }
  core::Status flushed = sink_.Flush();
  ReplayStats stats;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    for (size_t kind = 0; kind < std::variant_size_v<core::Record>; ++kind) {
      if (per_kind[kind] > 0) stats_.records[std::string(core::kTopicOfKind[kind])] = per_kind[kind];
    }
    stats_.bytes_read = source_->bytes_read();
    stats_.wall_ms = clock_.NowMs() - wall0_ms_;
    stats = stats_;
  }
  if (interval > 0) Progress(clock_.NowMs(), true);
  if (!failure.ok()) return failure;
  if (!flushed.ok()) return flushed;
  if (errors_.must_stop()) return core::Status::Error("stopped at the first bad row (--strict): " + errors_.first());
  return stats;
}

}  // namespace acmetrace::producers
