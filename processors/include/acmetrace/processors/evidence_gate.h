// Where the data ends, the flags end: an open anomaly flag whose evidence stopped coming (its node's
// or its cluster's telemetry, or at the end of the input every stream) is closed in trace time, as a
// real exporter's series go stale when its GPUs stop reporting.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/record.h"

namespace acmetrace::processors {

/// What a flag's evidence is: the telemetry of its subject's node (per-GPU kinds), the telemetry of
/// its cluster (kinds judged over the cluster's samples), or the job events (kinds of the job trace).
enum class Evidence { kNodeTelemetry, kClusterTelemetry, kJobs };
/// The evidence of a published kind (detector.h lists them); unknown kinds: kJobs.
Evidence EvidenceOf(std::string_view kind);

/// One cluster's open flags between its detectors and its output. A flag of a telemetry kind whose
/// evidence has sent nothing for timeout_ms of event time closes at its evidence's last sample plus
/// timeout_ms; if its detector still holds it open when the evidence comes back, it opens again at
/// that sample. The same transitions come out however the windows are cut (a gap is found from the
/// samples on either side of it, or from the watermark passing it). The detector's own close of a flag closed here is not written twice. At the end of
/// the input (Finish) every flag still open closes: a telemetry flag as above, a job flag at the
/// cluster's last job event (its evidence ended there). Event time only. Not thread-safe.
class EvidenceGate {
 public:
  explicit EvidenceGate(int64_t timeout_ms = 300'000) : timeout_ms_(timeout_ms) {}
  void set_timeout_ms(int64_t timeout_ms) { timeout_ms_ = timeout_ms; }

  /// A record applied to the cluster's detectors (in event-time order, not late).
  void Observe(const core::Record& record);
  /// The detectors' transitions for everything up to watermark_ms (appended to events by them):
  /// rewrites events in place into what is written (closes of flags already closed here dropped;
  /// closes of flags whose evidence stopped by watermark_ms and reopenings appended).
  void Filter(int64_t watermark_ms, std::vector<core::AnomalyEvent>& events);
  /// The input ended: appends the close of every flag still open.
  void Finish(std::vector<core::AnomalyEvent>& events);

  /// Open flags (shown or held open by their detector) and the evidence times, for snapshots.
  template <class Io, class Self>
  static void Fields(Io& io, Self& g) {
    io(g.node_last_ms_, g.cluster_last_ms_, g.jobs_last_ms_, g.flags_);
  }

  struct Flag {
    core::AnomalyEvent open;  // the open transition written (value, threshold, kind, subject)
    bool shown = true;        // false: closed here while its detector holds it open
    template <class Io, class Self>
    static void Fields(Io& io, Self& f) {
      io(f.open.cluster, f.open.kind, f.open.subject, f.open.ts_ms, f.open.value, f.open.threshold, f.shown);
    }
  };

 private:
  // A sample of node (or of the cluster, node empty) at ts_ms after its evidence had been away since
  // last_ms: the flags it is evidence for close where it stopped (if still shown) and open again now.
  void EvidenceBack(std::string_view node, int64_t last_ms, int64_t ts_ms);
  // When the flag's evidence last came (INT64_MIN: never seen).
  int64_t EvidenceLastMs(const Flag& f) const;
  static std::string_view NodeOfSubject(std::string_view kind, std::string_view subject);

  int64_t timeout_ms_;
  std::map<std::string, int64_t, std::less<>> node_last_ms_;  // node -> its last util sample
  int64_t cluster_last_ms_ = INT64_MIN;                      // the cluster's last util sample
  int64_t jobs_last_ms_ = INT64_MIN;                         // the cluster's last job event
  std::map<std::string, Flag, std::less<>> flags_;           // "kind\x1fsubject" -> open flag
  std::vector<core::AnomalyEvent> pending_;  // transitions found by Observe, written by the next Filter
  std::vector<core::AnomalyEvent> scratch_;
};

}  // namespace acmetrace::processors
