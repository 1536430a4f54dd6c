// A backfill over the fixture release: scrape times, what each scrape has seen, the labels the
// shipped scrape config adds.
#include "acmetrace/history/backfill.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/producers/event_stream.h"

namespace acmetrace::history {
namespace {

const std::string kFixture = std::string(ACMETRACE_FIXTURES) + "/release";

class CapturedScrapes : public ScrapeOutput {
 public:
  core::Status Scrape(int64_t ts_ms, std::string_view samples) override {
    scrapes.emplace_back(ts_ms, std::string(samples));
    return core::Status::Ok();
  }
  core::Status Finish() override {
    finished = true;
    return core::Status::Ok();
  }
  std::vector<std::pair<int64_t, std::string>> scrapes;
  bool finished = false;
};

// Sum of the values of lines starting with prefix in one scrape.
double Sum(const std::string& text, const std::string& prefix) {
  double sum = 0;
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      const size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end - at);
      const size_t v = line.rfind(' ', line.rfind(' ') - 1);
      sum += std::stod(line.substr(v + 1));
    }
    at += prefix.size();
  }
  return sum;
}

// The fixture's first half hour (17 records; its jobs end months later, a scrape every 15 s).
constexpr int64_t kFirstRecordMs = 1677601080000;
constexpr int64_t kUntilMs = kFirstRecordMs + 1'800'000;

BackfillOptions FixtureOptions() {
  BackfillOptions options;
  options.stream.data_dir = kFixture;
  options.stream.range.to_ms = kUntilMs;
  options.step_ms = 15'000;
  return options;
}

TEST(BackfillTest, ScrapesEveryStepFromTheFirstRecordAndSeesExactlyTheRecordsUpToEachScrape) {
  // An independent count: the replay's records by time, read straight from the fixture.
  core::InputErrors count_errors(nullptr);
  producers::EventStreamOptions stream;
  stream.data_dir = kFixture;
  stream.range.to_ms = kUntilMs;
  auto opened = producers::EventStream::Open(stream, count_errors);
  ASSERT_TRUE(opened.ok());
  std::vector<int64_t> times;
  while (const core::Record* r = opened.value()->Next()) times.push_back(core::TimestampMsOf(*r));
  ASSERT_FALSE(times.empty());

  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  core::Result<BackfillStats> stats = RunBackfill(FixtureOptions(), errors, out);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_TRUE(out.finished);
  ASSERT_GE(out.scrapes.size(), 3u);
  EXPECT_EQ(stats.value().records, static_cast<int64_t>(times.size()));
  EXPECT_EQ(stats.value().scrapes, static_cast<int64_t>(out.scrapes.size()));
  const int64_t first = (times.front() + 14'999) / 15'000 * 15'000;
  EXPECT_EQ(out.scrapes.front().first, first);
  for (size_t i = 0; i < out.scrapes.size(); ++i) {
    const auto& [t, text] = out.scrapes[i];
    ASSERT_EQ(t, first + static_cast<int64_t>(i) * 15'000);
    const int64_t seen = std::count_if(times.begin(), times.end(), [t = t](int64_t ts) { return ts <= t; });
    EXPECT_EQ(Sum(text, "acmetrace_records_total{job=\"acmetrace\",instance=\"127.0.0.1:9400\",stage=\"replay\""),
              static_cast<double>(seen))
        << "scrape at " << t;
    // Every sample carries the scrape's time.
    const std::string stamp = " " + std::to_string(t / 1000) + "\n";
    size_t lines = 0, stamped = 0;
    for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; ++at) ++lines;
    for (size_t at = 0; (at = text.find(stamp, at)) != std::string::npos; ++at) ++stamped;
    EXPECT_EQ(lines, stamped);
  }
  // The last record is in the scrape before the end-of-input one.
  EXPECT_GE(out.scrapes[out.scrapes.size() - 2].first, times.back());
  EXPECT_EQ(out.scrapes.back().first - out.scrapes[out.scrapes.size() - 2].first, 15'000);
}

TEST(BackfillTest, TheShippedScrapeConfigsTargetsAndLabels) {
  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  ASSERT_TRUE(RunBackfill(FixtureOptions(), errors, out).ok());
  bool persona = false;
  for (const auto& [t, text] : out.scrapes) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("DCGM_", 0) == 0 || line.rfind("acmetrace_node_", 0) == 0) {
        // A node's own target: instance is the node, as /metrics?target=NODE scraped by acmetrace-gpu-nodes.
        persona = true;
        const std::string prefix = "{job=\"acmetrace-gpu-nodes\",instance=\"";
        const size_t brace = line.find('{');
        ASSERT_EQ(line.compare(brace, prefix.size(), prefix), 0) << line;
        const size_t from = brace + prefix.size();
        const std::string instance = line.substr(from, line.find('"', from) - from);
        ASSERT_FALSE(instance.empty()) << line;
        if (line.rfind("DCGM_", 0) == 0) {
          EXPECT_NE(line.find("Hostname=\"" + instance + "\""), std::string::npos) << line;
        }
      } else if (line.rfind("up{", 0) == 0) {
        EXPECT_NE(line.find(" 1 "), std::string::npos) << line;
      } else {
        EXPECT_EQ(line.find("{job=\"acmetrace\",instance=\"127.0.0.1:9400\""), line.find('{')) << line;
        EXPECT_NE(line.rfind("process_", 0), 0u) << "the backfilling process's own series: " << line;
      }
    }
  }
  EXPECT_TRUE(persona);
}

TEST(BackfillTest, PersonaOffLeavesTheNodeTargetsOut) {
  BackfillOptions options = FixtureOptions();
  options.persona = false;
  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  ASSERT_TRUE(RunBackfill(options, errors, out).ok());
  for (const auto& [t, text] : out.scrapes) {
    EXPECT_NE(text.rfind("DCGM_", 0), 0u);
    EXPECT_EQ(text.find("\nDCGM_"), std::string::npos);
    EXPECT_EQ(text.find("acmetrace-gpu-nodes"), std::string::npos);
  }
}

TEST(BackfillTest, TheSameInputGivesTheSameSamples) {
  CapturedScrapes a, b;
  core::InputErrors errors(nullptr);
  ASSERT_TRUE(RunBackfill(FixtureOptions(), errors, a).ok());
  ASSERT_TRUE(RunBackfill(FixtureOptions(), errors, b).ok());
  ASSERT_EQ(a.scrapes.size(), b.scrapes.size());
  for (size_t i = 0; i < a.scrapes.size(); ++i) {
    std::vector<std::string> la, lb;
    std::istringstream sa(a.scrapes[i].second), sb(b.scrapes[i].second);
    for (std::string l; std::getline(sa, l);) la.push_back(l);
    for (std::string l; std::getline(sb, l);) lb.push_back(l);
    std::sort(la.begin(), la.end());
    std::sort(lb.begin(), lb.end());
    EXPECT_EQ(la, lb) << "scrape " << i;
  }
}

// No scrape is stamped past the window: the last one shows the closed windows of the end.
TEST(BackfillTest, NoScrapeIsPastTheWindow) {
  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  core::Result<BackfillStats> stats = RunBackfill(FixtureOptions(), errors, out);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  for (const auto& [t, text] : out.scrapes) EXPECT_LT(t, kUntilMs);
  EXPECT_EQ(stats.value().last_scrape_ms, out.scrapes.back().first);
}

// A step longer than the window: one scrape, inside the window, that has seen every record.
TEST(BackfillTest, AStepLongerThanTheWindowStillScrapesInsideIt) {
  BackfillOptions options = FixtureOptions();
  options.stream.range.from_ms = kFirstRecordMs + 60'000;  // not on a day boundary
  options.step_ms = 86'400'000;
  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  core::Result<BackfillStats> stats = RunBackfill(options, errors, out);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_EQ(out.scrapes.size(), 1u);
  EXPECT_GE(out.scrapes[0].first, options.stream.range.from_ms);
  EXPECT_LT(out.scrapes[0].first, kUntilMs);
  EXPECT_EQ(out.scrapes[0].first, kUntilMs - 1000);  // the window's last second
  EXPECT_EQ(Sum(out.scrapes[0].second, "acmetrace_records_total{job=\"acmetrace\",instance=\"127.0.0.1:9400\",stage=\"replay\""),
            static_cast<double>(stats.value().records));
}

TEST(BackfillTest, AStopEndsTheBackfillAtTheNextScrape) {
  BackfillOptions options = FixtureOptions();
  StopRequest stop;
  options.stop = &stop;
  int scrapes = 0;
  options.on_scrape = [&](const BackfillStats&) {
    if (++scrapes == 3) stop.Request(SIGTERM);
  };
  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  core::Result<BackfillStats> stats = RunBackfill(options, errors, out);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("stopped"), std::string::npos) << stats.status().message();
  EXPECT_EQ(out.scrapes.size(), 3u);
  EXPECT_FALSE(out.finished);
}

// RunBackfill over options is the "no records in the window" error, before any scrape.
void ExpectNoRecordsInTheWindow(const BackfillOptions& options) {
  CapturedScrapes out;
  core::InputErrors errors(nullptr);
  core::Result<BackfillStats> stats = RunBackfill(options, errors, out);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().message().rfind("no records in the window (" + kFixture + ", ", 0), 0u)
      << stats.status().message();
  EXPECT_NE(stats.status().message().find("): check --from/--to and --clusters"), std::string::npos);
  EXPECT_TRUE(out.scrapes.empty());
}

TEST(BackfillTest, AWindowWithoutRecordsIsAnError) {
  BackfillOptions options = FixtureOptions();
  options.stream.range.from_ms = 4'000'000'000'000;
  ExpectNoRecordsInTheWindow(options);
}

}  // namespace
}  // namespace acmetrace::history

namespace acmetrace::history {
namespace {

// A window cut in two (at a time off the scrape grid) and backfilled as two slices gives the whole
// window's scrapes, text for text: the second slice replays what comes before it unscraped, and the
// first closes nothing at its cut (close_at_end false), as a backfill split over machines needs.
TEST(BackfillTest, TwoSlicesOfAWindowAddUpToTheWholeWindow) {
  auto run = [](int64_t scrape_from, int64_t to, bool close_at_end) {
    BackfillOptions options = FixtureOptions();
    options.scrape_from_ms = scrape_from;
    options.stream.range.to_ms = to;
    options.close_at_end = close_at_end;
    CapturedScrapes out;
    core::InputErrors errors(nullptr);
    core::Result<BackfillStats> stats = RunBackfill(options, errors, out);
    EXPECT_TRUE(stats.ok()) << stats.status().message();
    return out.scrapes;
  };
  const int64_t cut = kFirstRecordMs + 907'000;
  const auto whole = run(INT64_MIN, kUntilMs, /*close_at_end=*/false);
  auto slices = run(INT64_MIN, cut, false);
  const auto second = run(cut, kUntilMs, false);
  ASSERT_FALSE(second.empty());
  EXPECT_GE(second.front().first, cut);
  slices.insert(slices.end(), second.begin(), second.end());
  // The same samples at the same times (a series first seen at a slice's first scrape is listed in
  // another order than where the whole window saw it appear: the order of lines means nothing).
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    std::sort(out.begin(), out.end());
    return out;
  };
  ASSERT_EQ(slices.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(slices[i].first, whole[i].first) << i;
    EXPECT_TRUE(lines(slices[i].second) == lines(whole[i].second)) << "scrape " << i << " at " << whole[i].first;
  }
  // Closing at the cut (the end of the input there) would show what the whole window does not.
  const auto closed = run(INT64_MIN, cut, true);
  bool differs = closed.size() != slices.size() - second.size();
  for (size_t i = 0; !differs && i < closed.size(); ++i) differs = lines(closed[i].second) != lines(whole[i].second);
  EXPECT_TRUE(differs) << "the cut shows nothing a close would change: pick another cut";
}

// A window that opens at or after its end (--from past the data): an error before any record is
// replayed, whatever precedes it.
TEST(BackfillTest, AWindowOpeningAtOrAfterItsEndIsNoRecordsInTheWindow) {
  BackfillOptions options = FixtureOptions();
  options.scrape_from_ms = kUntilMs;
  ExpectNoRecordsInTheWindow(options);
}

}  // namespace
}  // namespace acmetrace::history
