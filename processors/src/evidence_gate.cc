// EvidenceGate: open flags whose evidence stopped are closed in trace time.
#include "acmetrace/processors/evidence_gate.h"

#include <algorithm>
#include <variant>

namespace acmetrace::processors {
namespace {

std::string FlagKey(std::string_view kind, std::string_view subject) {
  std::string key(kind);
  key += '\x1f';
  key += subject;
  return key;
}

core::AnomalyEvent Transition(const core::AnomalyEvent& open, bool is_open, int64_t ts_ms) {
  core::AnomalyEvent e = open;
  e.open = is_open;
  e.ts_ms = ts_ms;
  return e;
}

}  // namespace

Evidence EvidenceOf(std::string_view kind) {
  if (kind == "gpu_overheat" || kind == "xid_error" || kind == "gpu_straggler") return Evidence::kNodeTelemetry;
  if (kind == "telemetry_gap" || kind == "util_drop") return Evidence::kClusterTelemetry;
  return Evidence::kJobs;
}

std::string_view EvidenceGate::NodeOfSubject(std::string_view kind, std::string_view subject) {
  if (EvidenceOf(kind) != Evidence::kNodeTelemetry) return subject;
  const size_t dash = subject.rfind('-');  // "10.140.1.10-3": the node, then the GPU index
  return dash == std::string_view::npos ? subject : subject.substr(0, dash);
}

int64_t EvidenceGate::EvidenceLastMs(const Flag& f) const {
  switch (EvidenceOf(f.open.kind)) {
    case Evidence::kNodeTelemetry: {
      auto it = node_last_ms_.find(NodeOfSubject(f.open.kind, f.open.subject));
      return it == node_last_ms_.end() ? INT64_MIN : it->second;
    }
    case Evidence::kClusterTelemetry: return cluster_last_ms_;
    case Evidence::kJobs: return jobs_last_ms_;
  }
  return INT64_MIN;
}

void EvidenceGate::EvidenceBack(std::string_view node, int64_t last_ms, int64_t ts_ms) {
  for (auto& [_, f] : flags_) {
    const Evidence e = EvidenceOf(f.open.kind);
    if (node.empty() ? e != Evidence::kClusterTelemetry
                     : e != Evidence::kNodeTelemetry || NodeOfSubject(f.open.kind, f.open.subject) != node) {
      continue;
    }
    if (f.shown) {
      const int64_t stopped = std::max(last_ms, f.open.ts_ms) + timeout_ms_;
      if (stopped >= ts_ms) continue;  // no gap since it opened
      pending_.push_back(Transition(f.open, false, stopped));
    }
    pending_.push_back(Transition(f.open, true, ts_ms));
    f.open.ts_ms = ts_ms;
    f.shown = true;
  }
}

void EvidenceGate::Observe(const core::Record& record) {
  if (const auto* u = std::get_if<core::UtilSample>(&record)) {
    auto it = node_last_ms_.find(u->node);
    if (it == node_last_ms_.end()) it = node_last_ms_.emplace(u->node, INT64_MIN).first;
    if (it->second != INT64_MIN && u->ts_ms - it->second > timeout_ms_) EvidenceBack(u->node, it->second, u->ts_ms);
    if (cluster_last_ms_ != INT64_MIN && u->ts_ms - cluster_last_ms_ > timeout_ms_) {
      EvidenceBack({}, cluster_last_ms_, u->ts_ms);
    }
    it->second = std::max(it->second, u->ts_ms);
    cluster_last_ms_ = std::max(cluster_last_ms_, u->ts_ms);
  } else if (const auto* j = std::get_if<core::JobEvent>(&record)) {
    jobs_last_ms_ = std::max(jobs_last_ms_, j->ts_ms);
  }
}

void EvidenceGate::Filter(int64_t watermark_ms, std::vector<core::AnomalyEvent>& events) {
  scratch_.clear();
  scratch_.swap(pending_);  // what Observe found comes first at equal times
  for (core::AnomalyEvent& e : events) {
    const std::string key = FlagKey(e.kind, e.subject);
    auto it = flags_.find(key);
    if (e.open) {
      if (it == flags_.end()) {
        flags_.emplace(key, Flag{e});
      } else {
        it->second = Flag{e};
      }
    } else if (it != flags_.end()) {
      const bool shown = it->second.shown;
      flags_.erase(it);
      if (!shown) continue;  // closed here already when its evidence stopped
    }
    scratch_.push_back(std::move(e));
  }
  for (auto& [_, f] : flags_) {
    if (!f.shown || EvidenceOf(f.open.kind) == Evidence::kJobs) continue;  // job flags close by their own rule
    const int64_t stopped = std::max(EvidenceLastMs(f), f.open.ts_ms) + timeout_ms_;
    if (stopped > watermark_ms) continue;
    scratch_.push_back(Transition(f.open, false, stopped));
    f.shown = false;
  }
  std::stable_sort(scratch_.begin(), scratch_.end(),
                   [](const core::AnomalyEvent& a, const core::AnomalyEvent& b) { return a.ts_ms < b.ts_ms; });
  events.swap(scratch_);
}

void EvidenceGate::Finish(std::vector<core::AnomalyEvent>& events) {
  for (auto& [_, f] : flags_) {
    if (!f.shown) continue;
    const bool jobs = EvidenceOf(f.open.kind) == Evidence::kJobs;
    const int64_t last = std::max(EvidenceLastMs(f), f.open.ts_ms);
    events.push_back(Transition(f.open, false, jobs ? last : last + timeout_ms_));
  }
  flags_.clear();
}

}  // namespace acmetrace::processors
