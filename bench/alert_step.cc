// The backfill's alerting-rule step alone (history::BackfillAlerts) over the blocks an earlier backfill
// wrote, with the shipped rules: its wall time and, run under /usr/bin/time or by itself, the peak RSS of
// its largest process (the temporary prometheus). For comparing slice lengths on one set of blocks (the
// week at scale 1: bench/README.md); the step adds its ALERTS blocks to a hard-linked copy of PROMDIR,
// which it removes at the end.
//   alert_step PROMDIR FROM_MS TO_MS SLICE_H [WORK]
#include <sys/resource.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "acmetrace/history/alert_series.h"
#include "acmetrace/scoring/rule_file.h"

namespace {

// A whole number in [lo, hi], all of text, or none.
std::optional<int64_t> Whole(std::string_view text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace acmetrace;
  const std::optional<int64_t> from_ms = argc >= 5 ? Whole(argv[2], 0, INT64_MAX / 2) : std::nullopt;
  const std::optional<int64_t> to_ms = argc >= 5 ? Whole(argv[3], 0, INT64_MAX / 2) : std::nullopt;
  const std::optional<int64_t> slice_h = argc >= 5 ? Whole(argv[4], 1, 8'760) : std::nullopt;
  if (argc < 5 || argc > 6 || !from_ms || !to_ms || !slice_h || *to_ms < *from_ms) {
    std::fprintf(stderr,
                 "usage: alert_step PROMDIR FROM_MS TO_MS SLICE_H [WORK]  (unix ms, FROM_MS <= TO_MS; SLICE_H in "
                 "[1, 8760], as backfill.rules_slice_h)\n");
    return 2;
  }
  const fs::path work = argc == 6 ? fs::path(argv[5]) : fs::temp_directory_path() / "acmetrace-alert-step";
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  // Hard links: the step adds blocks to its blocks_dir, the original stays as it was.
  fs::copy(argv[1], work / "blocks", fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
  if (ec) {
    std::fprintf(stderr, "alert_step: linking %s: %s\n", argv[1], ec.message().c_str());
    return 1;
  }
  history::AlertBackfillOptions options;
  options.blocks_dir = (work / "blocks").string();
  options.work_dir = (work / "alerts").string();
  options.rules = scoring::ShippedRules();
  options.from_ms = *from_ms;
  options.to_ms = *to_ms;
  options.slice_ms = *slice_h * 3'600'000;
  const auto start = std::chrono::steady_clock::now();
  core::Result<history::AlertBackfillStats> stats = history::BackfillAlerts(options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fs::remove_all(work, ec);
  if (!stats.ok()) {
    std::fprintf(stderr, "alert_step: %s\n", stats.status().message().c_str());
    return 1;
  }
  rusage children{};
  getrusage(RUSAGE_CHILDREN, &children);
  std::printf("slices of %s h: %.1f s, %d rules, %lld firings, %lld samples, largest child's peak RSS %.0f MB\n", argv[4],
              seconds, stats.value().rules, static_cast<long long>(stats.value().firings),
              static_cast<long long>(stats.value().samples), static_cast<double>(children.ru_maxrss) / 1024.0);
  return 0;
}
