// PowerSource: the IPMI files of Seren, one record per row, server models A/B/C/D.
#include "acmetrace/producers/power_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "acmetrace/core/record_json.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

std::vector<std::string> Lines(PowerSource& source) {
  std::vector<std::string> out;
  while (const core::Record* r = source.Next()) {
    std::string line;
    core::AppendFramedLine(line, *r);
    line.pop_back();
    out.push_back(line);
  }
  return out;
}

std::string Line(const std::string& model, int64_t ts_ms, const std::string& fields) {
  return R"({"topic":"acme.power","key":"seren/)" + model + R"(","value":{"v":1,"cluster":"seren","model":")" + model +
         R"(","ts_ms":)" + std::to_string(ts_ms) + R"(,"fields":{)" + fields + "}}}";
}

constexpr char kHeader[] = "Time,CPU_Power,MEM_Power,FAN_Power,Sys_Total_Power\n";
constexpr int64_t kT = 1677601080000;  // 2023-03-01 00:18:00+08:00

TEST(PowerModelOfFileTest, NamesTheServerModel) {
  EXPECT_EQ(PowerModelOfFile("data/utilization/ipmi/GPU_C_Power.csv"), "GPU_C");
  EXPECT_EQ(PowerModelOfFile("CPU_D_Power.csv"), "CPU_D");
  EXPECT_EQ(PowerModelOfFile("GPU_AB_Power.csv"), "");  // decided per row
}

TEST(PowerSourceTest, SplitsGpuAbRowsByMemPower) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_AB_Power.csv",
                                     std::string(kHeader) +
                                         "2023-03-01 00:18:00+08:00,400,120,80,2520\n"
                                         "2023-03-01 00:18:00+08:00,380,,75,2400\n"
                                         "2023-03-01 00:18:15+08:00,390, ,70,2390\n");
  core::InputErrors errors(nullptr);
  PowerSource source("seren", {path}, errors, {});
  EXPECT_EQ(Lines(source),
            (std::vector<std::string>{
                Line("GPU_A", kT, R"("CPU_Power":400,"MEM_Power":120,"FAN_Power":80,"Sys_Total_Power":2520)"),
                Line("GPU_B", kT, R"("CPU_Power":380,"FAN_Power":75,"Sys_Total_Power":2400)"),
                Line("GPU_B", kT + 15000, R"("CPU_Power":390,"FAN_Power":70,"Sys_Total_Power":2390)"),
            }));
  EXPECT_EQ(errors.total(), 0);
}

TEST(PowerSourceTest, NamesGpuCAndCpuDModelsAndMergesFilesByTime) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "CPU_D_Power.csv", "Time,CPU_Power,Sys_Total_Power\n1677601095,300,546\n1677601125,301,547\n"),
      WriteFile(dir, "GPU_AB_Power.csv", std::string(kHeader) + "1677601080,400,120,80,2520\n1677601110,1,,2,3\n"),
      WriteFile(dir, "GPU_C_Power.csv", "Time,Sys_Total_Power,GPU_Power\n1677601080,6554,\n1677601125,2600,2000\n"),
  };
  core::InputErrors errors(nullptr);
  PowerSource source("seren", files, errors, {});
  const std::vector<std::string> lines = Lines(source);
  ASSERT_EQ(lines.size(), 6u);
  // Equal times: any order between files, but both present.
  const std::vector<std::string> first_two = {lines[0], lines[1]};
  EXPECT_NE(std::find(first_two.begin(), first_two.end(),
                      Line("GPU_A", kT, R"("CPU_Power":400,"MEM_Power":120,"FAN_Power":80,"Sys_Total_Power":2520)")),
            first_two.end());
  EXPECT_NE(std::find(first_two.begin(), first_two.end(), Line("GPU_C", kT, R"("Sys_Total_Power":6554)")),
            first_two.end());
  EXPECT_EQ(lines[2], Line("CPU_D", kT + 15000, R"("CPU_Power":300,"Sys_Total_Power":546)"));
  EXPECT_EQ(lines[3], Line("GPU_B", kT + 30000, R"("CPU_Power":1,"FAN_Power":2,"Sys_Total_Power":3)"));
  const std::vector<std::string> last_two = {lines[4], lines[5]};
  EXPECT_NE(std::find(last_two.begin(), last_two.end(),
                      Line("CPU_D", kT + 45000, R"("CPU_Power":301,"Sys_Total_Power":547)")),
            last_two.end());
  EXPECT_NE(std::find(last_two.begin(), last_two.end(),
                      Line("GPU_C", kT + 45000, R"("Sys_Total_Power":2600,"GPU_Power":2000)")),
            last_two.end());
  EXPECT_EQ(errors.total(), 0);
}

TEST(PowerSourceTest, ReadsTheFixtureIpmiFiles) {
  const std::string dir = std::string(ACMETRACE_FIXTURES) + "/release/data/utilization/ipmi";
  core::InputErrors errors(nullptr);
  PowerSource source("seren", {dir + "/CPU_D_Power.csv", dir + "/GPU_AB_Power.csv"}, errors, {});
  const std::vector<std::string> lines = Lines(source);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], Line("GPU_A", kT, R"("CPU_Power":400,"MEM_Power":120,"FAN_Power":80,"Sys_Total_Power":2520)"));
  EXPECT_EQ(lines[1], Line("GPU_B", kT, R"("CPU_Power":380,"FAN_Power":75,"Sys_Total_Power":2400)"));
  EXPECT_EQ(lines[2],
            Line("CPU_D", kT + 60000, R"("CPU_Power":300,"MEM_Power":60,"FAN_Power":40,"Sys_Total_Power":546)"));
  EXPECT_EQ(errors.total(), 0);
}

TEST(PowerSourceTest, ReportsBadCellsAndTimesAndKeepsTheRest) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_C_Power.csv",
                                     "Time,CPU_Power,Sys_Total_Power\n"
                                     "1677601080,x,2500\n"
                                     "later,1,2\n"
                                     "1677601095,10,2510\n");
  Captured out;
  core::InputErrors errors(out.file());
  PowerSource source("seren", {path}, errors, {});
  EXPECT_EQ(Lines(source), (std::vector<std::string>{Line("GPU_C", kT, R"("Sys_Total_Power":2500)"),
                                                     Line("GPU_C", kT + 15000, R"("CPU_Power":10,"Sys_Total_Power":2510)")}));
  const std::string text = out.messages();
  EXPECT_EQ(text.rfind(path + ":2: CPU_Power: not a number: 'x'\n", 0), 0u) << text;
  EXPECT_NE(text.find(path + ":3: Time: "), std::string::npos) << text;
  EXPECT_EQ(errors.counts().at({"seren", "ipmi"}), 2);
}

TEST(PowerSourceTest, HonoursTheHalfOpenRange) {
  const std::string dir = TestDir();
  const std::string path =
      WriteFile(dir, "CPU_D_Power.csv", "Time,Sys_Total_Power\n1677601080,1\n1677601095,2\n1677601110,3\n1677601125,4\n");
  core::InputErrors errors(nullptr);
  TimeRange range;
  range.from_ms = kT + 15000;
  range.to_ms = kT + 45000;
  PowerSource source("seren", {path}, errors, range);
  EXPECT_EQ(Lines(source), (std::vector<std::string>{Line("CPU_D", kT + 15000, R"("Sys_Total_Power":2)"),
                                                     Line("CPU_D", kT + 30000, R"("Sys_Total_Power":3)")}));
}

TEST(PowerSourceTest, MissingOrHeaderlessFilesAreReportedNotFatal) {
  const std::string dir = TestDir();
  const std::string missing = dir + "/GPU_C_Power.csv";
  const std::string empty = WriteFile(dir, "GPU_AB_Power.csv", "");
  const std::string good = WriteFile(dir, "CPU_D_Power.csv", "Time,Sys_Total_Power\n1677601080,546\n");
  Captured out;
  core::InputErrors errors(out.file());
  PowerSource source("seren", {missing, empty, good}, errors, {});
  EXPECT_EQ(Lines(source), (std::vector<std::string>{Line("CPU_D", kT, R"("Sys_Total_Power":546)")}));
  EXPECT_EQ(errors.total(), 2);
  EXPECT_NE(out.messages().find(missing), std::string::npos);
  EXPECT_NE(out.messages().find(empty), std::string::npos);
}

TEST(PowerSourceTest, AnUnbalancedQuoteIsOneLineOfErrorAndTheRestOfTheFileIsRead) {
  // It used to swallow the rest of the file into one cell, and echo it in a message of many lines.
  const std::string dir = TestDir();
  std::string content = "Time,CPU_Power,Sys_Total_Power\n1677601080,\"300,2500\n";
  for (int i = 1; i <= 30; ++i) content += std::to_string(1677601080 + i * 15) + "," + std::to_string(i) + ",2500\n";
  const std::string path = WriteFile(dir, "GPU_C_Power.csv", content);
  Captured out;
  core::InputErrors errors(out.file());
  PowerSource source("seren", {path}, errors, {});
  const std::vector<std::string> lines = Lines(source);
  ASSERT_EQ(lines.size(), 30u);
  EXPECT_EQ(lines[0], Line("GPU_C", kT + 15000, R"("CPU_Power":1,"Sys_Total_Power":2500)"));
  EXPECT_EQ(out.messages(), path + ":2: row: unbalanced quote: a quoted field not closed within 16 lines or by the end "
                               "of the file; row skipped\n");
}

TEST(PowerSourceTest, ATimeOutsideTheTraceYearsIsABadRow) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_C_Power.csv",
                                     "Time,CPU_Power\n1677601080,1\n9999-12-31 23:59:59+08:00,2\n1677601095,3\n");
  Captured out;
  core::InputErrors errors(out.file());
  PowerSource source("seren", {path}, errors, {});
  EXPECT_EQ(Lines(source), (std::vector<std::string>{Line("GPU_C", kT, R"("CPU_Power":1)"),
                                                     Line("GPU_C", kT + 15000, R"("CPU_Power":3)")}));
  EXPECT_EQ(out.messages(), path + ":3: Time: outside the accepted years 2000-2099: '9999-12-31 23:59:59+08:00'; row skipped\n");
}

}  // namespace
}  // namespace acmetrace::producers
