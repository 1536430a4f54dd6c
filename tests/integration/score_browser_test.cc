// The --html page of acmetrace score in a real headless browser (Debian's chromium): it renders,
// every rule and every incident is on it, each rule with its expression and its false alerts, with
// links to the Prometheus graph and Grafana's Explore; a screenshot is taken as a person would see it.
#include <gtest/gtest.h>

#include <iterator>

#include "score_test_support.h"

namespace acmetrace::score_test {
namespace {

TEST(ScoreBrowserTest, PageRendersEveryRuleAndIncident) {
  const std::string dir = testing::TempDir() + "/score_browser_" + std::to_string(::getpid());
  fs::remove_all(dir);
  LocalPrometheus prometheus(dir + "/prometheus", SceneOpenMetrics());
  ASSERT_EQ(prometheus.error(), "");
  std::ofstream(dir + "/faults.csv") << SceneFaults();
  std::ofstream(dir + "/rules.yml") << SceneRules();
  const std::string html = dir + "/score.html";
  const CommandRun run = RunCommand(std::string(ACMETRACE_BINARY) + " score --prometheus " + prometheus.url() +
                                    " --faults " + dir + "/faults.csv --rules " + dir +
                                    "/rules.yml --sweep-for 0s,3m --grafana http://127.0.0.1:3000 --html " + html +
                                    " --json " + dir + "/score.json");
  ASSERT_EQ(run.exit_code, 0) << run.output;

  // --no-sandbox: chromium refuses to run as root otherwise (CI containers).
  const std::string chromium = "timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=1400,1000 ";
  const CommandRun dom = RunCommand(chromium + "--dump-dom file://" + html + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.output;
  ASSERT_NE(dom.output.find("</html>"), std::string::npos) << dom.output.substr(0, 500);
  for (const char* rule : {"GpuHot", "Overheat", "Never", "AlwaysOn", "Flapping", "FlappingKept",
                           "OverheatEverySecond", "all rules"}) {
    EXPECT_NE(dom.output.find("<td class=\"l\">" + std::string(rule) + "</td>"), std::string::npos) << rule;
    if (std::string(rule) == "all rules") continue;  // the total has no row of bars
    EXPECT_NE(dom.output.find(">" + std::string(rule) + "</text>"), std::string::npos) << rule << " (timeline)";
  }
  // Both incidents: in the list (caught by whom, or missed) and as bands on the seren timeline.
  EXPECT_NE(dom.output.find("<td class=\"l\">n1-3</td>"), std::string::npos);
  EXPECT_NE(dom.output.find("<td class=\"l\">n2-0</td>"), std::string::npos);
  EXPECT_NE(dom.output.find("GpuHot (120 s)"), std::string::npos);
  size_t bands = 0;
  for (size_t p = dom.output.find("class=\"incident\""); p != std::string::npos;
       p = dom.output.find("class=\"incident\"", p + 1)) {
    ++bands;
  }
  EXPECT_EQ(bands, 2u);

  // Each rule: its expression, and its false alerts listed.
  const char* const rules[] = {"GpuHot", "Overheat", "Never", "AlwaysOn", "Flapping", "FlappingKept",
                               "OverheatEverySecond"};
  for (size_t r = 0; r < std::size(rules); ++r) {
    EXPECT_NE(dom.output.find("<div class=\"rule\" id=\"rule-" + std::to_string(r) + "\"><h3>" + rules[r] + "</h3>"),
              std::string::npos)
        << rules[r];
  }
  size_t expressions = 0;
  for (size_t p = dom.output.find("<pre class=\"expr\">"); p != std::string::npos;
       p = dom.output.find("<pre class=\"expr\">", p + 1)) {
    ++expressions;
  }
  EXPECT_EQ(expressions, std::size(rules));
  // GpuHot's false alert: the 88 C spike of 02:30, firing at 02:32 (10:32 on the cluster's UTC+8)
  // until 02:35, with links to it.
  const size_t gpu_hot = dom.output.find("<h3>GpuHot</h3>");
  const size_t false_alert = dom.output.find("<tr class=\"false-alert\">", gpu_hot);
  ASSERT_NE(false_alert, std::string::npos);
  const std::string row = dom.output.substr(false_alert, dom.output.find("</tr>", false_alert) - false_alert);
  EXPECT_NE(row.find("Hostname=\"n1\""), std::string::npos) << row;
  EXPECT_NE(row.find("2023-07-01 02:32:00+00:00"), std::string::npos) << row;
  EXPECT_NE(row.find("2023-07-01 10:32:00+08:00"), std::string::npos) << row;
  EXPECT_NE(row.find("<a class=\"graph\" href=\"" + prometheus.url() + "/graph?g0.expr=max%20by%20"), std::string::npos)
      << row;
  EXPECT_NE(row.find("<a class=\"explore\" href=\"http://127.0.0.1:3000/explore?orgId=1&amp;left="), std::string::npos)
      << row;
  // The link opens Prometheus's graph page on the false alert: the expression drawn over the hour
  // around it (the page's script runs in chromium; a range it cannot read leaves it with no step).
  const size_t href = row.find("href=\"") + 6;
  std::string graph = row.substr(href, row.find('"', href) - href);
  for (size_t amp = graph.find("&amp;"); amp != std::string::npos; amp = graph.find("&amp;", amp + 1)) {
    graph.replace(amp, 5, "&");
  }
  const CommandRun graph_page = RunCommand(chromium + "--virtual-time-budget=8000 --dump-dom '" + graph + "' 2>/dev/null");
  ASSERT_EQ(graph_page.exit_code, 0) << graph_page.output;
  EXPECT_NE(graph_page.output.find("Total time series: 1"), std::string::npos) << graph << "\n" << graph_page.output;
  EXPECT_EQ(graph_page.output.find("Error executing query"), std::string::npos) << graph;
  // Every false alert in the table is a row of the lists.
  size_t listed = 0;
  for (size_t p = dom.output.find("<tr class=\"false-alert\">"); p != std::string::npos;
       p = dom.output.find("<tr class=\"false-alert\">", p + 1)) {
    ++listed;
  }
  size_t false_alerts = 0;
  const std::string json = ReadAll(dir + "/score.json");
  for (size_t p = json.find("\"detects\": false"); p != std::string::npos; p = json.find("\"detects\": false", p + 1)) {
    ++false_alerts;
  }
  EXPECT_GT(listed, 3u);
  EXPECT_EQ(listed, false_alerts);
  // Each incident links to its graph.
  EXPECT_NE(dom.output.find("<td class=\"l\">n2-0</td>"), std::string::npos);
  size_t incident_links = 0;
  const size_t incidents = dom.output.find("<table id=\"incidents\">");
  const size_t incidents_end = dom.output.find("</table>", incidents);
  for (size_t p = dom.output.find("<a class=\"graph\"", incidents); p != std::string::npos && p < incidents_end;
       p = dom.output.find("<a class=\"graph\"", p + 1)) {
    ++incident_links;
  }
  EXPECT_EQ(incident_links, 2u);

  const std::string png = dir + "/score.png";
  const CommandRun shot = RunCommand(chromium + "--screenshot=" + png + " file://" + html);
  ASSERT_EQ(shot.exit_code, 0) << shot.output;
  const std::string image = ReadAll(png);
  ASSERT_GT(image.size(), 20'000u);  // a blank 1400x1000 page compresses to a few kB
  EXPECT_EQ(image.substr(1, 3), "PNG");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace acmetrace::score_test
