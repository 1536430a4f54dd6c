// Record helpers: topics, keys, the name intern table.
#include "acmetrace/core/record.h"

#include <memory>
#include <mutex>
#include <set>

namespace acmetrace::core {

std::string_view JobEventKindName(JobEventKind kind) {
  switch (kind) {
    case JobEventKind::kSubmit: return "submit";
    case JobEventKind::kStart: return "start";
    case JobEventKind::kEnd: return "end";
  }
  return "unknown";
}

int64_t TimestampMsOf(const Record& record) {
  return std::visit([](const auto& r) { return r.ts_ms; }, record);
}

void AppendKey(std::string& out, const Record& record) {
  std::visit(
      [&out](const auto& r) {
        out += r.cluster;
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, MetricsWindow>) {
          return;
        } else if constexpr (std::is_same_v<T, JobEvent>) {
          out.push_back('/');
          out += r.job_id;
        } else if constexpr (std::is_same_v<T, UtilSample>) {
          out.push_back('/');
          out += r.node;
        } else if constexpr (std::is_same_v<T, PowerSample>) {
          out.push_back('/');
          out += r.model;
        } else {
          out.push_back('/');
          out += r.kind;
          out.push_back('/');
          out += r.subject;
        }
      },
      record);
}

std::string_view InternName(std::string_view name) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = names.find(name);
  if (it == names.end()) it = names.emplace(name).first;
  return *it;
}

}  // namespace acmetrace::core
