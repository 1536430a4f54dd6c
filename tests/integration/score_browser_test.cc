// The --html page of acmetrace score in a real headless browser (Debian's chromium): it renders,
// and every rule and every incident is on it; a screenshot is taken as a person would see it.
#include <gtest/gtest.h>

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
                                    "/rules.yml --sweep-for 0s,3m --html " + html);
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
