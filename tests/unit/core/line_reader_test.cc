// LineReader: lines across chunk boundaries, a last line without newline, over-long lines skipped.
#include "acmetrace/core/line_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace acmetrace::core {
namespace {

struct Read {
  std::vector<std::string> lines;
  std::vector<int64_t> numbers;   // line_no of each
  std::vector<int64_t> too_long;  // line_no of each over-long line
};

Read ReadAll(const std::string& text, size_t max_line_bytes) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::tmpfile(), &std::fclose);
  std::fwrite(text.data(), 1, text.size(), f.get());
  std::rewind(f.get());
  LineReader reader(f.get(), max_line_bytes);
  Read out;
  std::string_view line;
  for (LineReader::Result r; (r = reader.Next(line)) != LineReader::Result::kEnd;) {
    if (r == LineReader::Result::kTooLong) {
      out.too_long.push_back(reader.line_no());
    } else {
      out.lines.emplace_back(line);
      out.numbers.push_back(reader.line_no());
    }
  }
  EXPECT_FALSE(reader.failed());
  return out;
}

TEST(LineReaderTest, SaysItsLimitInTheReasonForAnOverlongLine) {
  EXPECT_EQ(LineReader(stdin).TooLongReason(), "line longer than 64 MiB: skipped");
  EXPECT_EQ(LineReader(stdin, 100).TooLongReason(), "line longer than 100 bytes: skipped");
}

TEST(LineReaderTest, SplitsLinesAndKeepsALastLineWithoutNewline) {
  const Read r = ReadAll("a\n\nbc\r\nlast", 1 << 20);
  EXPECT_EQ(r.lines, (std::vector<std::string>{"a", "", "bc\r", "last"}));
  EXPECT_EQ(r.numbers, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(ReadAll("", 1 << 20).lines.empty());
}

TEST(LineReaderTest, LinesSpanningChunksComeWhole) {
  // Lines of 700 KB cross the 1 MiB read chunks.
  const std::string a(700'000, 'a'), b(700'000, 'b'), c(700'000, 'c');
  const Read r = ReadAll(a + "\n" + b + "\n" + c + "\n", 64 << 20);
  EXPECT_EQ(r.lines, (std::vector<std::string>{a, b, c}));
}

TEST(LineReaderTest, AnOverLongLineIsSkippedWholeAndCountedOnce) {
  // The limit is checked when a chunk ends inside a line: 3 MB without a newline is over 1 MB.
  const std::string huge(3'000'000, 'x');
  const Read r = ReadAll("first\n" + huge + "\nafter\n" + huge, 1'000'000);
  EXPECT_EQ(r.lines, (std::vector<std::string>{"first", "after"}));
  EXPECT_EQ(r.numbers, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(r.too_long, (std::vector<int64_t>{2, 4}));
}

}  // namespace
}  // namespace acmetrace::core
