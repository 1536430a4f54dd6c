// The queue's own metrics as text exposition, named after Prometheus's prometheus_remote_storage_*
// (what an operator of Prometheus's remote write already graphs and alerts on).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/remote_write/write_queue.h"

namespace acmetrace::remote_write {

/// Appends acmetrace_remote_storage_{samples_total, samples_failed_total, samples_retried_total,
/// samples_pending, bytes_total, shards, requests_total, requests_refused_total,
/// series_refused}{url="URL"} with HELP and TYPE lines (text format 0.0.4).
void AppendQueueMetrics(std::string& out, const QueueStats& stats, std::string_view url);

/// A series as PromQL writes it, name{a="x",...} (values escaped), for messages.
std::string SeriesText(const std::vector<Label>& labels);

}  // namespace acmetrace::remote_write
