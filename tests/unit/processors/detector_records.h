// Hand-built records for the detector tests (times in seconds, the cluster "seren" unless given).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "acmetrace/core/record.h"

namespace acmetrace::processors::test_records {

constexpr int64_t kT0 = 1688169600;  // 2023-07-01 08:00:00+08:00, in seconds

using Values = std::vector<double>;

/// Eight GPUs at v; EightWith: one of them (gpu) at other.
inline Values Eight(double v) { return Values(8, v); }
inline Values EightWith(double v, size_t gpu, double other) {
  Values out(8, v);
  out[gpu] = other;
  return out;
}

inline core::Record Util(const std::string& node, int64_t t_s,
                         const std::vector<std::pair<const char*, Values>>& gpu, const std::string& cluster = "seren") {
  core::UtilSample s;
  s.cluster = cluster;
  s.node = node;
  s.ts_ms = t_s * 1000;
  for (const auto& [name, values] : gpu) s.gpu.push_back({core::InternName(name), values});
  return s;
}

inline core::Record Job(core::JobEventKind event, const std::string& id, int64_t t_s, int64_t gpus,
                        const std::string& user = "u0001", const std::string& state = "",
                        const std::string& cluster = "seren") {
  core::JobEvent j;
  j.cluster = cluster;
  j.event = event;
  j.ts_ms = t_s * 1000;
  j.job_id = id;
  j.user = user;
  j.type = "Other";
  j.gpu_num = gpus;
  j.node_num = (gpus + 7) / 8;
  j.state = state;
  return j;
}

inline core::Record End(const std::string& id, int64_t t_s, int64_t gpus, const std::string& state,
                        const std::string& user = "u0001") {
  return Job(core::JobEventKind::kEnd, id, t_s, gpus, user, state);
}

}  // namespace acmetrace::processors::test_records
