// Job-trace rows in the release's format. The rules a reader can check: queue = start - submit;
// duration = end - start (Seren) or end - submit (Kalos); gpu_time = duration * gpu_num. A job cancelled
// while pending has no start_time, no queue, duration 0 and gpu_time 0.0: it used no GPU.
#include <algorithm>

#include "acmetrace/core/time.h"
#include "synth/output.h"
#include "synth/random.h"
#include "synth/writers.h"

namespace acmetrace::producers::synth {
namespace {

constexpr int64_t kSerenFirstJobS = 1677601102;  // release: job 5778432 submitted 2023-03-01 00:18:22+08:00
constexpr int64_t kSerenFirstJobId = 5778432;
constexpr double kSerenIdsPerDay = 6800;  // Slurm ids also count jobs outside the trace

}  // namespace

std::vector<std::string> MakeJobIds(const ClusterModel& model, const Schedule& schedule, uint64_t seed) {
  const auto& jobs = schedule.jobs;
  std::vector<std::string> ids(jobs.size());
  if (model.kalos_format) {
    static constexpr char kBase36[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    for (size_t i = 0; i < jobs.size(); ++i) {
      Rng rng(MixKey(MixKey(seed, 0x1D5), jobs[i].key));
      std::string id = "dlc";
      for (int c = 0; c < 13; ++c) id.push_back(kBase36[rng.Below(36)]);
      ids[i] = std::move(id);
    }
    return ids;
  }
  const double days = static_cast<double>(schedule.window_start_s - kSerenFirstJobS) / 86400.0;
  const int64_t base = std::max<int64_t>(1000000, kSerenFirstJobId + static_cast<int64_t>(days * kSerenIdsPerDay));
  size_t first = 0;
  while (first < jobs.size() && jobs[first].submit_s < schedule.window_start_s) ++first;
  Rng gaps(MixKey(MixKey(seed, HashName(model.name)), 0x1D6));
  int64_t id = base;
  for (size_t i = first; i < jobs.size(); ++i) {
    ids[i] = std::to_string(id);
    id += 1 + (gaps.Uniform() < 0.15 ? 1 + static_cast<int64_t>(gaps.Below(6)) : 0);
  }
  // Jobs submitted before the window count down from it on a stream of their own, so their ids do not
  // depend on how many jobs the window holds (the first day of a longer run is the same trace).
  Rng back_gaps(MixKey(MixKey(seed, HashName(model.name)), 0x1D7));
  id = base;
  for (size_t i = first; i-- > 0;) {
    id -= 1 + (back_gaps.Uniform() < 0.15 ? 1 + static_cast<int64_t>(back_gaps.Below(6)) : 0);
    ids[i] = std::to_string(std::max<int64_t>(1, id));
  }
  return ids;
}

core::Status WriteJobTrace(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                           const std::vector<std::string>& job_ids, const std::string& path,
                           WrittenFile& written) {
  OutputFile out;
  if (auto status = out.Open(path); !status.ok()) return status;
  out.Append(model.kalos_format
                 ? "job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,"
                   "start_time,end_time,fail_time,stop_time,duration,queue,gpu_time\n"
                 : "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,"
                   "gpu_time\n");
  const int offset = model.offset_minutes;
  std::string times;
  int64_t rows = 0;
  for (size_t i = 0; i < schedule.jobs.size(); ++i) {
    const Job& job = schedule.jobs[i];
    if (!job.in_trace) continue;
    const bool started = job.start_s >= 0;
    const int64_t queue = started ? job.start_s - job.submit_s : 0;
    const int64_t duration =
        !started ? 0 : model.kalos_format ? job.end_s - job.submit_s : job.end_s - job.start_s;
    char* p = out.Reserve(512);
    auto put = [&p](std::string_view text) {
      text.copy(p, text.size());
      p += text.size();
    };
    auto put_time = [&](int64_t t_s) {
      times.clear();
      core::AppendIsoTime(times, t_s * 1000, offset);
      put(times);
    };
    put(job_ids[i]);
    *p++ = ',';
    put(layout.users[job.user % layout.users.size()]);
    *p++ = ',';
    p = WriteInt(p, job.nodes);
    *p++ = ',';
    p = WriteInt(p, job.gpus);
    *p++ = ',';
    p = WriteInt(p, job.cpus);
    *p++ = ',';
    if (model.kalos_format) {
      p = WriteInt(p, job.mem_gb);
      *p++ = ',';
      p = WriteDecimal1(p, job.shared_mem_gb);
      *p++ = ',';
    }
    put(JobTypeName(job.type));
    *p++ = ',';
    put(JobStateName(job.state));
    *p++ = ',';
    put_time(job.submit_s);
    *p++ = ',';
    if (started) put_time(job.start_s);
    *p++ = ',';
    put_time(job.end_s);
    *p++ = ',';
    if (model.kalos_format) {
      const bool failed = job.state == JobState::kFailed || job.state == JobState::kNodeFail ||
                          job.state == JobState::kTimeout;
      if (failed) put_time(job.end_s);
      *p++ = ',';
      if (job.state == JobState::kCancelled) put_time(job.end_s);
      *p++ = ',';
    }
    p = WriteInt(p, duration);
    *p++ = ',';
    if (started) {
      if (model.kalos_format) {
        p = WriteDecimal1(p, static_cast<double>(queue));
      } else {
        p = WriteInt(p, queue);
      }
    }
    *p++ = ',';
    p = WriteInt(p, duration * job.gpus);
    put(".0\n");
    out.Commit(p);
    ++rows;
  }
  written.path = path;
  written.rows = rows;
  written.bytes = out.bytes();
  return out.Close();
}

void AppendScheduleRows(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                        const std::vector<std::string>& job_ids, std::string& out) {
  for (size_t i = 0; i < schedule.jobs.size(); ++i) {
    const Job& job = schedule.jobs[i];
    if (job.start_s < 0 || job.alloc.empty()) continue;
    if (job.end_s <= schedule.window_start_s || job.start_s >= schedule.window_end_s) continue;
    for (const NodeAlloc& a : job.alloc) {
      out += model.name;
      out += ',';
      out += job_ids[i];
      out += ',';
      out += job.in_trace ? '1' : '0';
      out += ',';
      out += layout.nodes[a.node].name;
      out += ',';
      bool first = true;
      for (int g = 0; g < 8; ++g) {
        if (!(a.gpu_mask & (1u << g))) continue;
        if (!first) out += ';';
        out += static_cast<char>('0' + g);
        first = false;
      }
      out += ',';
      out += std::to_string(job.start_s);
      out += ',';
      out += std::to_string(job.end_s);
      out += ',';
      out += std::to_string(job.xid);
      out += '\n';
    }
  }
}

}  // namespace acmetrace::producers::synth
