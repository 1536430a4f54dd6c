// The log line format (text and JSON), its escaping, levels, and the process-wide logger on a pinned
// clock and a temporary file.
#include "acmetrace/core/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace acmetrace::core {
namespace {

constexpr int64_t kNoon = 1688212800123;  // 2023-07-01T12:00:00.123Z

TEST(LogFormatTest, TextLineHasTimestampLevelStageAndMessage) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, kNoon, LogLevel::kInfo, "replay", "1234 records in 2.00 s"),
            "2023-07-01T12:00:00.123Z INFO  replay: 1234 records in 2.00 s\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, kNoon, LogLevel::kError, "export", "cannot listen"),
            "2023-07-01T12:00:00.123Z ERROR export: cannot listen\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, 0, LogLevel::kWarn, "input", "x"), "1970-01-01T00:00:00.000Z WARN  input: x\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, 5, LogLevel::kDebug, "kafka", "y"), "1970-01-01T00:00:00.005Z DEBUG kafka: y\n");
}

TEST(LogFormatTest, TextEscapesControlCharactersSoOneCallIsOneLine) {
  const std::string line =
      FormatLogLine(LogFormat::kText, kNoon, LogLevel::kWarn, "input", "a.csv:3: user: 'x\ny\rz\tw\\v\x01'");
  EXPECT_EQ(line, "2023-07-01T12:00:00.123Z WARN  input: a.csv:3: user: 'x\\ny\\rz\\tw\\\\v\\x01'\n");
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(LogFormatTest, JsonLineIsOneObjectWithEscapedStrings) {
  const std::string message = "quote \" backslash \\ newline \n tab \t bell \x07 utf-8 \xc3\xa9";
  const std::string line = FormatLogLine(LogFormat::kJson, kNoon, LogLevel::kWarn, "re\"play", message);
  EXPECT_EQ(line,
            "{\"ts\":\"2023-07-01T12:00:00.123Z\",\"level\":\"warn\",\"stage\":\"re\\\"play\","
            "\"msg\":\"quote \\\" backslash \\\\ newline \\u000a tab \\u0009 bell \\u0007 utf-8 \xc3\xa9\"}\n");
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;  // one object, one line
}

TEST(LogFormatTest, ParsesFlagValues) {
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("info"), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("warn"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("warning"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("error"), LogLevel::kError);
  EXPECT_EQ(ParseLogLevel("INFO"), std::nullopt);
  EXPECT_EQ(ParseLogLevel(""), std::nullopt);
  EXPECT_EQ(ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(ParseLogFormat("logfmt"), std::nullopt);
}

std::string ReadAll(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

// Restores the process-wide defaults whatever a test did.
class LoggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = std::tmpfile();
    ASSERT_NE(file_, nullptr);
    SetLogOutput(file_);
    SetLogClock([] { return kNoon; });
  }
  void TearDown() override {
    ConfigureLogging(LogFormat::kText, LogLevel::kInfo);
    SetLogOutput(stderr);
    SetLogClock(nullptr);
    std::fclose(file_);
  }
  std::FILE* file_ = nullptr;
};

TEST_F(LoggerTest, WritesLinesAtOrAboveTheLevel) {
  ConfigureLogging(LogFormat::kText, LogLevel::kWarn);
  LogDebug("replay", "debug line");
  LogInfo("replay", "info line");
  LogWarn("replay", "warn line");
  Logf(LogLevel::kError, "replay", "%d records, %s", 42, "error line");
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  EXPECT_EQ(ReadAll(file_),
            "2023-07-01T12:00:00.123Z WARN  replay: warn line\n"
            "2023-07-01T12:00:00.123Z ERROR replay: 42 records, error line\n");
}

TEST_F(LoggerTest, JsonFormatAppliesToEveryLine) {
  ConfigureLogging(LogFormat::kJson, LogLevel::kDebug);
  LogDebug("synth", "d");
  LogTo(file_, LogLevel::kInfo, "input", "trace_seren.csv:7: gpu_num: not a number");
  EXPECT_EQ(ReadAll(file_),
            "{\"ts\":\"2023-07-01T12:00:00.123Z\",\"level\":\"debug\",\"stage\":\"synth\",\"msg\":\"d\"}\n"
            "{\"ts\":\"2023-07-01T12:00:00.123Z\",\"level\":\"info\",\"stage\":\"input\","
            "\"msg\":\"trace_seren.csv:7: gpu_num: not a number\"}\n");
}

TEST_F(LoggerTest, LogfFormatsLongMessagesWhole) {
  const std::string long_text(2000, 'x');
  Logf(LogLevel::kInfo, "run", "%s|end", long_text.c_str());
  EXPECT_EQ(ReadAll(file_), "2023-07-01T12:00:00.123Z INFO  run: " + long_text + "|end\n");
}

}  // namespace
}  // namespace acmetrace::core
