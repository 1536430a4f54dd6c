// SeriesStore: labelled series, expiry by each cluster's event-time clock, cardinality cap.
#include "acmetrace/exporters/series_store.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace acmetrace::exporters {
namespace {

constexpr char kKeySeparator = '\x1f';

// prometheus-cpp's Summary always carries _sum and _count, which the hour view has not: Collect
// gives a summary family's quantile samples as untyped (the same sample lines).
prometheus::MetricType TypeOf(SeriesType t) {
  switch (t) {
    case SeriesType::kCounter: return prometheus::MetricType::Counter;
    case SeriesType::kSummary: return prometheus::MetricType::Untyped;
    case SeriesType::kGauge: break;
  }
  return prometheus::MetricType::Gauge;
}

prometheus::ClientMetric Sample(const LabelVec& labels, SeriesType type, double value) {
  prometheus::ClientMetric m;
  m.label = labels;
  if (type == SeriesType::kCounter) {
    m.counter.value = value;
  } else if (type == SeriesType::kSummary) {
    m.untyped.value = value;
  } else {
    m.gauge.value = value;
  }
  return m;  // timestamp_ms stays 0: no sample timestamps in the exposition
}

void AppendHeader(std::string& out, const std::string& name, const std::string& help, SeriesType type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  AppendEscaped(out, help, false);
  out += "\n# TYPE ";
  out += name;
  out += type == SeriesType::kCounter ? " counter\n" : type == SeriesType::kSummary ? " summary\n" : " gauge\n";
}

void AppendSample(std::string& out, const std::string& name, std::string_view labels_text, double v) {
  out += name;
  out += labels_text;
  out += ' ';
  AppendSampleValue(out, v);
  out += '\n';
}

bool MatchesTarget(std::string_view target, const std::string& cluster, const std::string& node) {
  if (target == node) return true;
  const size_t slash = target.find('/');
  return slash != std::string_view::npos && target.substr(0, slash) == cluster && target.substr(slash + 1) == node;
}

}  // namespace

void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendSampleValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
  } else {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}


std::shared_ptr<const LabelSet> MakeLabelSet(LabelVec labels) {
  auto set = std::make_shared<LabelSet>();
  if (!labels.empty()) {
    set->text += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) set->text += ',';
      set->text += labels[i].name;
      set->text += "=\"";
      AppendEscaped(set->text, labels[i].value, true);
      set->text += '"';
    }
    set->text += '}';
  }
  set->labels = std::move(labels);
  return set;
}

SeriesStore::SeriesStore(StoreOptions options) : options_(options) {}

FamilyId SeriesStore::AddFamily(FamilySpec spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : families_) {
    if (f->spec.name == spec.name) throw std::logic_error("metric family declared twice: " + spec.name);
  }
  auto f = std::make_unique<Family>();
  f->spec = std::move(spec);
  f->ttl_ms = TtlMs(f->spec.expiry);
  f->sweep_every_ms = SweepEveryMs();
  families_.push_back(std::move(f));
  return static_cast<FamilyId>(families_.size() - 1);
}

SeriesLabels SeriesStore::MakeLabels(FamilyId family, const std::vector<std::string>& values) const {
  const FamilySpec& s = spec(family);
  LabelVec labels;
  labels.reserve(values.size());
  SeriesLabels out;
  for (size_t i = 0; i < values.size() && i < s.label_names.size(); ++i) {
    labels.push_back({s.label_names[i], values[i]});
    if (i > 0) out.key += kKeySeparator;
    out.key += values[i];
  }
  out.labels = MakeLabelSet(std::move(labels));
  return out;
}

SeriesStore::Series* SeriesStore::FindOrCreate(Family& f, std::string_view key,
                                               const std::shared_ptr<const LabelSet>* labels,
                                               std::shared_ptr<const LabelSet> (*make)(void*), void* make_ctx,
                                               bool& created) {
  auto it = f.series.find(key);
  if (it != f.series.end()) return &it->second;
  if (static_cast<int64_t>(f.series.size()) >= options_.max_series_per_metric) {
    ++f.dropped;
    return nullptr;
  }
  Series s;
  s.labels = labels != nullptr ? *labels : make(make_ctx);
  s.labels_text = s.labels->text;
  s.family = &f;
  s.serial = next_serial_++;
  created = true;
  s.dense_at = static_cast<uint32_t>(f.dense.size());
  auto node = f.series.emplace(std::string(key), std::move(s)).first;
  node->second.key = &node->first;
  f.dense.push_back(&node->second);
  return &node->second;
}

SeriesStore::SeriesIt SeriesStore::EraseLocked(Family& f, SeriesIt it) {
  Series* last = f.dense.back();
  last->dense_at = it->second.dense_at;
  f.dense[last->dense_at] = last;
  f.dense.pop_back();
  ++generation_;
  if (f.spec.per_target) ++target_erase_epoch_;
  return f.series.erase(it);
}

SeriesStore::Series* SeriesStore::SeriesOf(FamilyId family, const SeriesLabels& labels, std::string_view cluster,
                                           std::string_view target) {
  Family& f = *families_[static_cast<size_t>(family)];
  bool created = false;
  Series* s = FindOrCreate(f, labels.key, &labels.labels, nullptr, nullptr, created);
  if (s != nullptr && created) {
    s->cluster = cluster;
    s->target = target;
  }
  return s;
}

bool SeriesStore::Set(FamilyId family, const SeriesLabels& labels, double value, std::string_view cluster,
                      int64_t ts_ms, std::string_view target) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series* s = SeriesOf(family, labels, cluster, target);
  if (s == nullptr) return false;
  SetLocked(s, value, ts_ms);
  return true;
}

bool SeriesStore::Add(FamilyId family, const SeriesLabels& labels, double delta, std::string_view cluster,
                      int64_t ts_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series* s = SeriesOf(family, labels, cluster, {});
  if (s == nullptr) return false;
  ++generation_;
  s->value += delta;
  Touch(*s, ts_ms);
  return true;
}

SeriesStore::Series* SeriesStore::FindLocked(FamilyId family, std::string_view key) {
  Family& f = *families_[static_cast<size_t>(family)];
  auto it = f.series.find(key);
  return it == f.series.end() ? nullptr : &it->second;
}

double SeriesStore::Get(FamilyId family, std::string_view key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Family& f = *families_[static_cast<size_t>(family)];
  auto it = f.series.find(key);
  return it == f.series.end() ? std::numeric_limits<double>::quiet_NaN() : it->second.value;
}

bool SeriesStore::Remove(FamilyId family, std::string_view key) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family& f = *families_[static_cast<size_t>(family)];
  auto it = f.series.find(key);
  if (it == f.series.end()) return false;
  EraseLocked(f, it);
  return true;
}

bool SeriesStore::SetValue(FamilyId family, std::string_view key, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series* s = FindLocked(family, key);
  if (s == nullptr) return false;
  s->value = value;
  ++generation_;
  return true;
}

bool SeriesStore::SetScrapeOnly(FamilyId family, std::string_view key, bool scrape_only) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series* s = FindLocked(family, key);
  if (s == nullptr) return false;
  if (s->scrape_only != scrape_only) ++generation_;
  s->scrape_only = scrape_only;
  return true;
}

void SeriesStore::RemoveSetBefore(FamilyId family, std::string_view cluster, int64_t ts_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family& f = *families_[static_cast<size_t>(family)];
  for (auto it = f.series.begin(); it != f.series.end();) {
    if (it->second.cluster == cluster && it->second.set_ms < ts_ms) {
      it = EraseLocked(f, it);
    } else {
      ++it;
    }
  }
}

int64_t SeriesStore::SweepEveryMs() const { return std::max<int64_t>(1000, options_.series_ttl_ms / 4); }

int64_t SeriesStore::TtlMs(Expiry expiry) const {
  switch (expiry) {
    case Expiry::kSubject:
      return options_.series_ttl_ms;
    case Expiry::kAnomaly:
      return options_.anomaly_ttl_ms;
    case Expiry::kNever:
      break;
  }
  return -1;
}

int64_t SeriesStore::AdvanceClock(std::string_view cluster, int64_t ts_ms, ClockKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = clocks_.find(cluster);
  if (it == clocks_.end()) it = clocks_.emplace(std::string(cluster), std::array<Clock, 2>{}).first;
  Clock& c = it->second[static_cast<size_t>(kind)];
  if (ts_ms <= c.now_ms) return 0;
  c.now_ms = ts_ms;
  // The latest sweep point strictly before the clock: every record before the clock has been
  // applied (one ordered stream per clock), so what expires at that point is known for sure. A
  // week replayed at full speed costs a few thousand sweeps, not one per record.
  const int64_t q = SweepEveryMs();
  const int64_t before = ts_ms - 1;
  const int64_t point = (before >= 0 ? before / q : (before - q + 1) / q) * q;
  if (point <= c.swept_at_ms) return 0;
  const bool first = c.swept_at_ms == INT64_MIN;
  c.swept_at_ms = point;
  return first ? 0 : SweepLocked(it->first, kind, point);
}

int64_t SeriesStore::SweepLocked(const std::string& cluster, ClockKind kind, int64_t at_ms) {
  int64_t removed = 0;
  const bool telemetry = kind == ClockKind::kTelemetry;
  for (auto& fp : families_) {
    Family& f = *fp;
    if (f.ttl_ms < 0 || f.spec.per_target != telemetry) continue;
    for (size_t i = 0; i < f.dense.size();) {
      const Series& s = *f.dense[i];
      // The time test first: most series are fresh, and it costs less than comparing clusters.
      if (at_ms - s.set_ms > f.ttl_ms && s.set_ms != kNeverSet && s.cluster == cluster) {
        EraseLocked(f, f.series.find(*s.key));  // the last series moves into place i: looked at next
        ++f.expired;
        ++removed;
      } else {
        ++i;
      }
    }
  }
  return removed;
}

int64_t SeriesStore::clock_ms(std::string_view cluster, ClockKind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = clocks_.find(cluster);
  return it == clocks_.end() || it->second[static_cast<size_t>(kind)].now_ms == INT64_MIN
             ? 0
             : it->second[static_cast<size_t>(kind)].now_ms;
}

std::vector<prometheus::MetricFamily> SeriesStore::Collect(std::string_view target) const {
  std::vector<prometheus::MetricFamily> out;
  std::lock_guard<std::mutex> lock(mutex_);
  out.reserve(families_.size() + 3);
  for (const auto& fp : families_) {
    const Family& f = *fp;
    if (!target.empty() && !f.spec.per_target) continue;
    prometheus::MetricFamily mf;
    mf.name = f.spec.name;
    mf.help = f.spec.help;
    mf.type = TypeOf(f.spec.type);
    mf.metric.reserve(target.empty() ? f.series.size() : 16);
    for (const auto& [key, s] : f.series) {
      if (!target.empty() && !MatchesTarget(target, s.cluster, s.target)) continue;
      mf.metric.push_back(Sample(s.labels->labels, f.spec.type, s.value));
    }
    if (!mf.metric.empty()) out.push_back(std::move(mf));
  }
  if (!target.empty()) return out;
  prometheus::MetricFamily series{"acmetrace_series", "series held per metric", prometheus::MetricType::Gauge, {}};
  prometheus::MetricFamily dropped{"acmetrace_series_dropped_total",
                                   "series not created because the metric reached export.max_series_per_metric",
                                   prometheus::MetricType::Counter,
                                   {}};
  prometheus::MetricFamily expired{"acmetrace_series_expired_total",
                                   "series removed because their subject was not seen for their time to live (event "
                                   "time)",
                                   prometheus::MetricType::Counter,
                                   {}};
  for (const auto& fp : families_) {
    const LabelVec labels{{"metric", fp->spec.name}};
    series.metric.push_back(Sample(labels, SeriesType::kGauge, static_cast<double>(fp->series.size())));
    dropped.metric.push_back(Sample(labels, SeriesType::kCounter, static_cast<double>(fp->dropped)));
    if (fp->spec.expiry != Expiry::kNever) {
      expired.metric.push_back(Sample(labels, SeriesType::kCounter, static_cast<double>(fp->expired)));
    }
  }
  out.push_back(std::move(series));
  out.push_back(std::move(dropped));
  out.push_back(std::move(expired));
  return out;
}

void SeriesStore::AppendText(std::string& out, std::string_view target, bool scrape_view, Families families) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& fp : families_) {
    const Family& f = *fp;
    if (!target.empty() && !f.spec.per_target) continue;
    if (target.empty() && families == Families::kNotPerTarget && f.spec.per_target) continue;
    bool header = false;
    for (const auto& [key, s] : f.series) {
      if (!target.empty() && !MatchesTarget(target, s.cluster, s.target)) continue;
      if (s.scrape_only && !scrape_view) continue;
      if (!header) {
        AppendHeader(out, f.spec.name, f.spec.help, f.spec.type);
        header = true;
      }
      AppendSample(out, f.spec.name, s.labels_text, s.value);
    }
  }
  if (!target.empty()) return;
  // The self families, as Collect appends them.
  std::string labels;
  const std::string series = "acmetrace_series", dropped = "acmetrace_series_dropped_total",
                    expired = "acmetrace_series_expired_total";
  AppendHeader(out, series, "series held per metric", SeriesType::kGauge);
  for (const auto& fp : families_) {
    // The state (not the scrape view) counts only the series it shows: a closed flag still on show
    // for scrapers depends on wall time, not on the data.
    size_t shown = fp->series.size();
    if (!scrape_view) {
      for (const auto& [key, s] : fp->series) shown -= s.scrape_only ? 1 : 0;
    }
    AppendSample(out, series, "{metric=\"" + fp->spec.name + "\"}", static_cast<double>(shown));
  }
  AppendHeader(out, dropped, "series not created because the metric reached export.max_series_per_metric",
               SeriesType::kCounter);
  for (const auto& fp : families_) {
    AppendSample(out, dropped, "{metric=\"" + fp->spec.name + "\"}", static_cast<double>(fp->dropped));
  }
  AppendHeader(out, expired,
               "series removed because their subject was not seen for their time to live (event time)",
               SeriesType::kCounter);
  for (const auto& fp : families_) {
    if (fp->spec.expiry == Expiry::kNever) continue;
    AppendSample(out, expired, "{metric=\"" + fp->spec.name + "\"}", static_cast<double>(fp->expired));
  }
}

void SeriesStore::ForEachTargetSample(const std::function<void(const TargetSample&)>& fn) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& fp : families_) {
    const Family& f = *fp;
    if (!f.spec.per_target) continue;
    for (const Series* s : f.dense) fn(TargetSample{f.spec, s->labels_text, s->value, s->cluster, s->target, s->serial});
  }
}

uint64_t SeriesStore::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

std::map<std::string, std::vector<std::string>> SeriesStore::Targets() const {
  std::map<std::string, std::vector<std::string>> out;
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::map<std::string, bool>> seen;
  for (const auto& fp : families_) {
    if (!fp->spec.per_target) continue;
    for (const auto& [key, s] : fp->series) seen[s.cluster][s.target] = true;
  }
  for (const auto& [cluster, nodes] : seen) {
    for (const auto& [node, unused] : nodes) out[cluster].push_back(node);
  }
  return out;
}

FamilyCounts SeriesStore::counts(FamilyId family) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Family& f = *families_[static_cast<size_t>(family)];
  return FamilyCounts{static_cast<int64_t>(f.series.size()), f.dropped, f.expired};
}

int64_t SeriesStore::total_series() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t n = 0;
  for (const auto& f : families_) n += static_cast<int64_t>(f->series.size());
  return n;
}

}  // namespace acmetrace::exporters
