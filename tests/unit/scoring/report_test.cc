// The three views of a run: the JSON shape the issue fixes, the table, and the self-contained page.
#include "acmetrace/scoring/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kMin = 60'000;

ScoreReport Report() {
  ScoreReport report;
  report.from_ms = kT0;
  report.to_ms = kT0 + 600 * kMin;
  report.incidents = {{"seren", "gpu_overheat", "10.140.1.10-3", kT0 + 60 * kMin, kT0 + 70 * kMin},
                      {"kalos", "util_drop", "kalos", kT0 + 300 * kMin, kT0 + 320 * kMin}};
  RuleFirings hot;
  hot.rule = "GpuHot";
  hot.group = "dcgm-gpu";
  hot.for_ms = kMin;
  hot.interval_ms = kMin;
  hot.intervals = {{{{"cluster", "seren"}, {"Hostname", "10.140.1.10"}, {"gpu", "3"}}, kT0 + 62 * kMin,
                    kT0 + 71 * kMin, false},
                   {{{"cluster", "seren"}, {"Hostname", "10.140.1.12"}, {"gpu", "0"}}, kT0 + 400 * kMin,
                    kT0 + 600 * kMin, true}};
  RuleFirings quiet;
  quiet.rule = "Quiet<&>";
  quiet.group = "g";
  for (const RuleFirings& f : {hot, quiet}) {
    report.scores.push_back(ScoreRule(f, report.incidents, report.window));
    report.firings.push_back(f);
  }
  report.total = ScoreSet("all rules", report.scores, report.incidents);
  report.sweep.push_back({report.scores[0]});
  return report;
}

TEST(ReportTest, JsonHasTheDocumentedShape) {
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(Report()));
  ASSERT_EQ(doc["rules"].size(), 2u);
  const nlohmann::json& hot = doc["rules"][0];
  EXPECT_EQ(hot["rule"], "GpuHot");
  EXPECT_EQ(hot["group"], "dcgm-gpu");
  EXPECT_EQ(hot["onsets"], 2);
  EXPECT_EQ(hot["false_alerts"], 1);
  EXPECT_DOUBLE_EQ(hot["precision"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(hot["recall"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(hot["ttd_median_s"].get<double>(), 120.0);
  EXPECT_DOUBLE_EQ(hot["ttd_worst_s"].get<double>(), 120.0);
  EXPECT_DOUBLE_EQ(hot["for_s"].get<double>(), 60.0);
  ASSERT_EQ(hot["incidents"].size(), 2u);
  const nlohmann::json& first = hot["incidents"][0];
  EXPECT_EQ(first["cluster"], "seren");
  EXPECT_EQ(first["kind"], "gpu_overheat");
  EXPECT_EQ(first["subject"], "10.140.1.10-3");
  EXPECT_EQ(first["start"], 1'688'173'200);
  EXPECT_EQ(first["end"], 1'688'173'800);
  EXPECT_EQ(first["caught"], true);
  EXPECT_DOUBLE_EQ(first["ttd_s"].get<double>(), 120.0);
  EXPECT_TRUE(hot["incidents"][1]["ttd_s"].is_null());
  EXPECT_EQ(hot["firing"][1]["open"], true);
  EXPECT_EQ(hot["firing"][1]["detects"], false);
  // A rule that never fired: no precision, no time to detect.
  const nlohmann::json& quiet = doc["rules"][1];
  EXPECT_EQ(quiet["onsets"], 0);
  EXPECT_TRUE(quiet["precision"].is_null());
  EXPECT_DOUBLE_EQ(quiet["recall"].get<double>(), 0.0);
  EXPECT_TRUE(quiet["ttd_median_s"].is_null());
  const nlohmann::json& total = doc["total"];
  EXPECT_EQ(total["onsets"], 2);
  EXPECT_DOUBLE_EQ(total["recall"].get<double>(), 0.5);
  EXPECT_EQ(total["incidents"].size(), 2u);
  EXPECT_EQ(doc["sweep"].size(), 1u);
  EXPECT_EQ(doc["window"]["from"], 1'688'169'600);
}

TEST(ReportTest, TableHasARowPerRuleAndTheTotal) {
  const std::string table = FormatTable(Report());
  EXPECT_NE(table.find("GpuHot"), std::string::npos);
  EXPECT_NE(table.find("Quiet<&>"), std::string::npos);
  EXPECT_NE(table.find("all rules"), std::string::npos);
  EXPECT_NE(table.find("gpu_overheat 1/1, util_drop 0/1"), std::string::npos) << table;
  EXPECT_NE(table.find("for: sweep"), std::string::npos);
}

TEST(ReportTest, TheTableEscapesControlCharactersOfRuleGroupAndKindNames) {
  ScoreReport report = Report();
  // A rule file's names with ESC [ 2 J (clear the screen), an OSC title, a C1 CSI (U+009B) and a newline.
  report.scores[1].rule = "Quiet\x1b[2J\x1b]0;owned\x07";
  report.scores[1].group = "g\xc2\x9b" "31m\nfake row";
  report.scores[1].by_kind["k\x1b[8m"] = {};
  const std::string table = FormatTable(report);
  for (const char c : table) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n') << "control character " << static_cast<int>(u) << " in the table";
  }
  EXPECT_EQ(table.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(table.find("Quiet\\x1b[2J\\x1b]0;owned\\x07"), std::string::npos) << table;
  EXPECT_NE(table.find("g\\u009b31m\\nfake row"), std::string::npos) << table;
  EXPECT_NE(table.find("k\\x1b[8m 0/0"), std::string::npos) << table;
  EXPECT_EQ(table.find("\nfake row"), std::string::npos);
}

TEST(ReportTest, HtmlIsSelfContainedAndShowsEveryRuleAndIncident) {
  const std::string html = FormatHtml(Report());
  for (const char* text : {"GpuHot", "Quiet&lt;&amp;&gt;", "10.140.1.10-3", "util_drop", "cluster kalos",
                           "cluster seren", "missed", "GpuHot (120 s)"}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(html.find("Quiet<&>"), std::string::npos);  // escaped
  // Nothing is fetched when the page is viewed.
  for (const char* external : {"<script", "<link", "src=", "url(", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
}

}  // namespace
}  // namespace acmetrace::scoring
