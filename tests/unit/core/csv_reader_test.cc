// CsvReader: every edge case of the release's files, with the default buffer and with tiny ones
// that force refills in the middle of rows, quotes and line breaks.
#include "acmetrace/core/csv_reader.h"
#include "test_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace acmetrace::core {
namespace {

struct Row {
  int64_t line;
  std::vector<std::string> fields;
  bool operator==(const Row& o) const { return line == o.line && fields == o.fields; }
};

std::ostream& operator<<(std::ostream& os, const Row& row) {
  os << row.line << ":[";
  for (size_t i = 0; i < row.fields.size(); ++i) {
    if (i > 0) os << "|";
    for (char c : row.fields[i]) {
      if (c == '\n') {
        os << "\\n";
      } else if (c == '\r') {
        os << "\\r";
      } else {
        os << c;
      }
    }
  }
  return os << "]";
}

// Each call should use a new name: truncating an existing file is much slower than creating one
// on some file systems, and the boundary sweeps write thousands.
// Reads every row; fails the test on an open or read error.
std::vector<Row> ReadAll(const std::string& path, size_t chunk_bytes) {
  CsvReader reader;
  const Status opened = reader.Open(path, chunk_bytes);
  EXPECT_TRUE(opened.ok()) << opened.message();
  std::vector<Row> rows;
  std::vector<std::string_view> fields;
  while (reader.NextRow(fields)) {
    Row row{reader.line(), {}};
    for (std::string_view f : fields) row.fields.emplace_back(f);
    rows.push_back(std::move(row));
  }
  EXPECT_TRUE(reader.status().ok()) << reader.status().message();
  return rows;
}

struct EdgeCase {
  const char* name;
  std::string content;
  std::vector<Row> expected;
};

std::vector<EdgeCase> EdgeCases() {
  const std::string long_field(1000, 'x');
  return {
      {"lf", "a,b\nc,d\n", {{1, {"a", "b"}}, {2, {"c", "d"}}}},
      {"crlf", "a,b\r\nc,d\r\n", {{1, {"a", "b"}}, {2, {"c", "d"}}}},
      {"lone_cr", "a,b\rc,d\r", {{1, {"a", "b"}}, {2, {"c", "d"}}}},
      {"mixed_endings", "a\r\nb\rc\nd\r\ne", {{1, {"a"}}, {2, {"b"}}, {3, {"c"}}, {4, {"d"}}, {5, {"e"}}}},
      {"no_final_newline", "a,b\nc,d", {{1, {"a", "b"}}, {2, {"c", "d"}}}},
      {"blank_lines", "a\n\n\nb\n\r\n\rc\n\n", {{1, {"a"}}, {4, {"b"}}, {7, {"c"}}}},
      {"empty_fields", ",a,,\n,\n", {{1, {"", "a", "", ""}}, {2, {"", ""}}}},
      {"quoted_comma", "x,\"a,b\",y\nz\n", {{1, {"x", "a,b", "y"}}, {2, {"z"}}}},
      {"doubled_quotes", "\"he said \"\"hi\"\"\",2\n\"\"\"\",\"\"\n",
       {{1, {"he said \"hi\"", "2"}}, {2, {"\"", ""}}}},
      {"embedded_lf", "h\n\"line1\nline2\",x\nnext,row\n",
       {{1, {"h"}}, {2, {"line1\nline2", "x"}}, {4, {"next", "row"}}}},
      {"embedded_crlf", "\"a\r\nb\r\nc\",d\r\ne\r\n", {{1, {"a\r\nb\r\nc", "d"}}, {4, {"e"}}}},
      {"embedded_lone_cr", "\"a\rb\",c\nd\n", {{1, {"a\rb", "c"}}, {3, {"d"}}}},
      {"quoted_no_final_newline", "a\n\"c\",\"d\"", {{1, {"a"}}, {2, {"c", "d"}}}},
      {"quoted_then_lone_cr_at_end", "h\n\"x\ny\",b\r", {{1, {"h"}}, {2, {"x\ny", "b"}}}},
      {"quoted_row_lone_cr", "\"a\"\rb\r\"c\",d\r", {{1, {"a"}}, {2, {"b"}}, {3, {"c", "d"}}}},
      {"quote_inside_unquoted_field", "ab\"c,d\n", {{1, {"ab\"c", "d"}}}},
      {"long_row", "k," + long_field + "\n\"q\"," + long_field + "\nend\n",
       {{1, {"k", long_field}}, {2, {"q", long_field}}, {3, {"end"}}}},
      {"only_blank_lines", "\n\r\n\r\n", {}},
      {"empty_file", "", {}},
  };
}

class CsvReaderTest : public testing::TestWithParam<size_t> {};

TEST_P(CsvReaderTest, ReadsEveryEdgeCase) {
  const std::string dir = TestDir();
  for (const EdgeCase& c : EdgeCases()) {
    const std::string path = WriteFile(dir, std::string(c.name) + ".csv", c.content);
    EXPECT_EQ(ReadAll(path, GetParam()), c.expected) << "case " << c.name;
  }
}

// ForEachField hands over the same fields one at a time (NextRow is built on it).
TEST_P(CsvReaderTest, ReadsEveryEdgeCaseFieldByField) {
  const std::string dir = TestDir();
  for (const EdgeCase& c : EdgeCases()) {
    const std::string path = WriteFile(dir, std::string(c.name) + ".csv", c.content);
    CsvReader reader;
    ASSERT_TRUE(reader.Open(path, GetParam()).ok());
    std::vector<Row> rows;
    std::vector<std::string> fields;
    while (reader.ForEachField([&fields](std::string_view field) { fields.emplace_back(field); })) {
      rows.push_back({reader.line(), std::move(fields)});
      fields.clear();
    }
    EXPECT_TRUE(reader.status().ok());
    EXPECT_EQ(rows, c.expected) << "case " << c.name;
  }
}

TEST_P(CsvReaderTest, SkipsUtf8Bom) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "bom.csv", "\xEF\xBB\xBFTime,10.140.1.10\r\n1688169600,8.101\r\n");
  const std::vector<Row> expected = {{1, {"Time", "10.140.1.10"}}, {2, {"1688169600", "8.101"}}};
  EXPECT_EQ(ReadAll(path, GetParam()), expected);
}

TEST_P(CsvReaderTest, SkipsUtf8BomBeforeQuotedHeader) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "bom.csv", "\xEF\xBB\xBF\"Time\",x\n1,2");
  const std::vector<Row> expected = {{1, {"Time", "x"}}, {2, {"1", "2"}}};
  EXPECT_EQ(ReadAll(path, GetParam()), expected);
}

TEST_P(CsvReaderTest, KeepsBomBytesAfterTheStart) {
  // Only a BOM at the very start of the file is a BOM.
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "late_bom.csv", "a\n\xEF\xBB\xBF" "b\n");
  const std::vector<Row> expected = {{1, {"a"}}, {2, {"\xEF\xBB\xBF" "b"}}};
  EXPECT_EQ(ReadAll(path, GetParam()), expected);
}

TEST_P(CsvReaderTest, KeepsLineNumbersAcrossManyMultiLineFields) {
  const std::string dir = TestDir();
  std::string content = "header\n";
  std::vector<Row> expected = {{1, {"header"}}};
  int64_t line = 2;
  for (int i = 0; i < 50; ++i) {
    const int breaks = i % 4;  // 0..3 line breaks inside the quoted field
    std::string value = "v" + std::to_string(i);
    for (int b = 0; b < breaks; ++b) value += (b % 2 == 0 ? "\r\n" : "\n") + std::to_string(b);
    content += std::to_string(i) + ",\"" + value + "\"\n";
    expected.push_back({line, {std::to_string(i), value}});
    line += 1 + breaks;
  }
  const std::string path = WriteFile(dir, "multi.csv", content);
  EXPECT_EQ(ReadAll(path, GetParam()), expected);
}

TEST_P(CsvReaderTest, ReadsManyRowsInOrder) {
  const std::string dir = TestDir();
  std::string content;
  std::vector<Row> expected;
  for (int i = 1; i <= 2000; ++i) {
    content += std::to_string(i) + "," + std::string(i % 37, 'y') + (i % 3 == 0 ? "\r\n" : "\n");
    expected.push_back({i, {std::to_string(i), std::string(i % 37, 'y')}});
  }
  const std::string path = WriteFile(dir, "many.csv", content);
  EXPECT_EQ(ReadAll(path, GetParam()), expected);
}

TEST_P(CsvReaderTest, CountsBytesRead) {
  const std::string dir = TestDir();
  const std::string content = "a,b\nc,d\n";
  const std::string path = WriteFile(dir, "bytes.csv", content);
  CsvReader reader;
  ASSERT_TRUE(reader.Open(path, GetParam()).ok());
  std::vector<std::string_view> fields;
  while (reader.NextRow(fields)) {
  }
  EXPECT_EQ(reader.bytes_read(), static_cast<int64_t>(content.size()));
  EXPECT_EQ(reader.path(), path);
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, CsvReaderTest,
                         testing::Values(size_t{1}, size_t{64}, size_t{65}, size_t{67}, size_t{100},
                                         CsvReader::kDefaultChunkBytes),
                         [](const testing::TestParamInfo<size_t>& info) {
                           return "chunk" + std::to_string(info.param);
                         });

// Shifts every edge case through every position of a 64-byte buffer, so each line break, quote
// and doubled quote lands on a refill boundary at least once.
TEST(CsvReaderBoundaryTest, ReadsEveryEdgeCaseAtEveryBufferOffset) {
  const std::string dir = TestDir();
  for (const EdgeCase& c : EdgeCases()) {
    for (size_t pad = 0; pad <= 140; ++pad) {
      const std::string content = "p," + std::string(pad, 'p') + "\n" + c.content;
      std::vector<Row> expected = {{1, {"p", std::string(pad, 'p')}}};
      for (const Row& r : c.expected) expected.push_back({r.line + 1, r.fields});
      const std::string path = WriteFile(dir, std::string(c.name) + "_" + std::to_string(pad) + ".csv", content);
      ASSERT_EQ(ReadAll(path, 64), expected) << "case " << c.name << ", pad " << pad;
      std::filesystem::remove(path);
    }
  }
}

TEST(CsvReaderBoundaryTest, CrLfInsideQuotesAtEveryBufferOffset) {
  // The CR and LF of a quoted CRLF may land in different reads: still one line break.
  const std::string dir = TestDir();
  for (size_t pad = 0; pad <= 140; ++pad) {
    const std::string value = std::string(pad, 'v') + "\r\n" + "w";
    const std::string content = "\"" + value + "\",1\r\nafter,2\r\n";
    const std::string path = WriteFile(dir, "crlf_" + std::to_string(pad) + ".csv", content);
    const std::vector<Row> expected = {{1, {value, "1"}}, {3, {"after", "2"}}};
    ASSERT_EQ(ReadAll(path, 64), expected) << "pad " << pad;
    std::filesystem::remove(path);
  }
}

TEST(CsvReaderBoundaryTest, BomWithFirstRowAcrossRefill) {
  const std::string dir = TestDir();
  for (size_t len = 0; len <= 130; ++len) {
    const std::string first(len, 'h');
    const std::string path =
        WriteFile(dir, "bom_" + std::to_string(len) + ".csv", "\xEF\xBB\xBF" + first + ",t\r\n1,2\r\n");
    const std::vector<Row> expected = {{1, {first, "t"}}, {2, {"1", "2"}}};
    ASSERT_EQ(ReadAll(path, 64), expected) << "len " << len;
    std::filesystem::remove(path);
  }
}

TEST(CsvReaderStreamingTest, ReadsALfFileIncrementally) {
  const std::string dir = TestDir();
  std::string content;
  for (int i = 0; i < 5000; ++i) content += "row," + std::to_string(i) + "\n";
  const std::string path = WriteFile(dir, "big.csv", content);
  CsvReader reader;
  ASSERT_TRUE(reader.Open(path, 64).ok());
  std::vector<std::string_view> fields;
  ASSERT_TRUE(reader.NextRow(fields));
  EXPECT_LE(reader.bytes_read(), 128);
}

TEST(CsvReaderStreamingTest, ReadsALoneCrFileIncrementally) {
  // Old-Mac line endings: the buffer must not grow to the whole file looking for an LF.
  const std::string dir = TestDir();
  std::string content;
  for (int i = 0; i < 5000; ++i) content += "row," + std::to_string(i) + "\r";
  const std::string path = WriteFile(dir, "big_cr.csv", content);
  CsvReader reader;
  ASSERT_TRUE(reader.Open(path, 64).ok());
  std::vector<std::string_view> fields;
  ASSERT_TRUE(reader.NextRow(fields));
  EXPECT_LE(reader.bytes_read(), 128);
  int64_t rows = 1;
  while (reader.NextRow(fields)) {
    ++rows;
    ASSERT_EQ(fields.size(), 2u);
    ASSERT_EQ(fields[1], std::to_string(rows - 1));
    ASSERT_EQ(reader.line(), rows);
  }
  EXPECT_EQ(rows, 5000);
}

TEST(CsvReaderOpenTest, MissingFileIsAnErrorNamingThePath) {
  CsvReader reader;
  const std::string path = testing::TempDir() + "acmetrace_no_such_dir/missing.csv";
  const Status s = reader.Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  std::vector<std::string_view> fields;
  EXPECT_FALSE(reader.NextRow(fields));
}

TEST(CsvReaderOpenTest, DirectoryIsAnErrorAtOpen) {
  // open(2) takes a directory and only read(2) fails: Open says what it is, naming it.
  const std::string dir = TestDir();
  CsvReader reader;
  const Status opened = reader.Open(dir);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.message(), dir + ": is a directory, not a file");
  std::vector<std::string_view> fields;
  EXPECT_FALSE(reader.NextRow(fields));
}

TEST(CsvReaderOpenTest, EmptyFileHasNoRowsAndNoError) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "empty.csv", "");
  CsvReader reader;
  ASSERT_TRUE(reader.Open(path).ok());
  std::vector<std::string_view> fields = {"stale"};
  EXPECT_FALSE(reader.NextRow(fields));
  EXPECT_TRUE(fields.empty());
  EXPECT_TRUE(reader.status().ok());
}

// Reads every row with a sink that records the skipped ones as "LINE: FIELD: reason".
std::vector<Row> ReadReporting(const std::string& path, size_t chunk_bytes, std::vector<std::string>& skipped,
                               size_t max_row_bytes = CsvReader::kDefaultMaxRowBytes) {
  CsvReader reader;
  EXPECT_TRUE(reader.Open(path, chunk_bytes).ok());
  reader.set_max_row_bytes(max_row_bytes);
  reader.set_error_sink([&skipped](int64_t line, std::string_view field, std::string_view reason) {
    skipped.push_back(std::to_string(line) + ": " + std::string(field) + ": " + std::string(reason));
  });
  std::vector<Row> rows;
  std::vector<std::string_view> fields;
  while (reader.NextRow(fields)) {
    Row row{reader.line(), {}};
    for (std::string_view f : fields) row.fields.emplace_back(f);
    rows.push_back(std::move(row));
  }
  EXPECT_TRUE(reader.status().ok()) << reader.status().message();
  EXPECT_EQ(reader.rows_skipped(), static_cast<int64_t>(skipped.size()));
  return rows;
}

TEST_P(CsvReaderTest, AnUnbalancedQuoteSkipsItsLineAndTheRestOfTheFileIsRead) {
  // The IPMI file: one cell opens a quote that never closes. It used to swallow the rest
  // of the file into one field.
  const std::string dir = TestDir();
  std::string content = "Time,CPU_Power\n1677601080,\"300\n";
  std::vector<Row> expected = {{1, {"Time", "CPU_Power"}}};
  for (int i = 0; i < 40; ++i) {
    content += std::to_string(1677601095 + i * 15) + "," + std::to_string(i) + "\n";
    expected.push_back({3 + i, {std::to_string(1677601095 + i * 15), std::to_string(i)}});
  }
  const std::string path = WriteFile(dir, "ipmi.csv", content);
  std::vector<std::string> skipped;
  EXPECT_EQ(ReadReporting(path, GetParam(), skipped), expected);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0],
            "2: row: unbalanced quote: a quoted field not closed within 16 lines or by the end of the file; row skipped");
}

TEST_P(CsvReaderTest, AnUnbalancedQuoteNearTheEndOfTheFileSkipsOnlyItsLine) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "end.csv", "a,b\n\"open,1\nc,2\nd,3");
  std::vector<std::string> skipped;
  const std::vector<Row> expected = {{1, {"a", "b"}}, {3, {"c", "2"}}, {4, {"d", "3"}}};
  EXPECT_EQ(ReadReporting(path, GetParam(), skipped), expected);
  EXPECT_EQ(skipped.size(), 1u);
}

TEST_P(CsvReaderTest, AQuotedFieldMaySpanUpToTheLimitOfLines) {
  const std::string dir = TestDir();
  std::string value = "v";
  for (int64_t i = 0; i < CsvReader::kMaxQuotedLines; ++i) value += "\nx";
  const std::string path = WriteFile(dir, "span.csv", "\"" + value + "\",1\nnext\n");
  std::vector<std::string> skipped;
  const std::vector<Row> expected = {{1, {value, "1"}}, {2 + CsvReader::kMaxQuotedLines, {"next"}}};
  EXPECT_EQ(ReadReporting(path, GetParam(), skipped), expected);
  EXPECT_TRUE(skipped.empty());
}

TEST_P(CsvReaderTest, ARowLongerThanTheLimitIsSkippedAndReported) {
  const std::string dir = TestDir();
  const std::string path =
      WriteFile(dir, "long.csv", "h\n" + std::string(5000, 'x') + "\r\nafter\n\"q" + std::string(3000, 'y') + "\"\nend");
  std::vector<std::string> skipped;
  const std::vector<Row> expected = {{1, {"h"}}, {3, {"after"}}, {5, {"end"}}};
  EXPECT_EQ(ReadReporting(path, GetParam(), skipped, 1000), expected);
  EXPECT_EQ(skipped, (std::vector<std::string>{"2: row: longer than 1000 bytes; row skipped",
                                               "4: row: longer than 1000 bytes; row skipped"}));
}

TEST_P(CsvReaderTest, ARowWithMoreFieldsThanTheLimitIsSkippedAndReported) {
  const std::string dir = TestDir();
  const std::string wide(CsvReader::kMaxFields, ',');  // kMaxFields + 1 empty fields
  const std::string path = WriteFile(dir, "wide.csv", "a\n" + wide + "\n\"q\"" + wide + "\nb\n");
  std::vector<std::string> skipped;
  const std::vector<Row> expected = {{1, {"a"}}, {4, {"b"}}};
  EXPECT_EQ(ReadReporting(path, GetParam(), skipped), expected);
  EXPECT_EQ(skipped, (std::vector<std::string>{"2: row: has more than 65536 fields; row skipped",
                                               "3: row: has more than 65536 fields; row skipped"}));
}

TEST_P(CsvReaderTest, ARowOfExactlyTheLimitIsKeptWhateverItsLineEnding) {
  // Found by csv_reader_fuzz: with a small buffer, a 16-byte row whose CR ended a read was measured
  // with its CR and skipped as longer than 16 bytes. The first line puts that CR last in a 64-byte
  // buffer's first read (56 bytes).
  const std::string dir = TestDir();
  const std::string row(16, 'r');
  const std::string path = WriteFile(dir, "exact.csv", std::string(38, 'p') + "\n" + row + "\r\n" + row + "\r" + row + "\n" + row);
  std::vector<std::string> skipped;
  const std::vector<Row> expected = {{2, {row}}, {3, {row}}, {4, {row}}, {5, {row}}};
  EXPECT_EQ(ReadReporting(path, GetParam(), skipped, 16), expected);
  EXPECT_EQ(skipped, std::vector<std::string>{"1: row: longer than 16 bytes; row skipped"});
}

}  // namespace
}  // namespace acmetrace::core
