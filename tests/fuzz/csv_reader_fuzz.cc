// Fuzzes core::CsvReader: any bytes, read with a buffer from 64 bytes (refills inside rows, quotes
// and line breaks) and a small row limit. Checks that the two ways of reading a row (NextRow and
// ForEachField) give the same fields, that line numbers only grow, that no row exceeds the limits,
// and that nothing is left unread without a reason.
#include <cstdint>
#include <string>
#include <vector>

#include "acmetrace/core/csv_reader.h"
#include "fuzz_support.h"

namespace {

struct Row {
  int64_t line;
  std::vector<std::string> fields;
  bool operator==(const Row&) const = default;
};

std::vector<Row> ReadAll(const std::string& path, size_t chunk, size_t max_row, bool by_field, int64_t& skipped) {
  acmetrace::core::CsvReader reader;
  if (!reader.Open(path, chunk).ok()) std::abort();
  reader.set_max_row_bytes(max_row);
  std::vector<Row> rows;
  std::vector<std::string_view> fields;
  int64_t last_line = 0;
  for (;;) {
    Row row;
    if (by_field) {
      if (!reader.ForEachField([&row](std::string_view f) { row.fields.emplace_back(f); })) break;
    } else {
      if (!reader.NextRow(fields)) break;
      for (std::string_view f : fields) row.fields.emplace_back(f);
    }
    row.line = reader.line();
    ACMETRACE_FUZZ_CHECK(row.line > last_line);
    ACMETRACE_FUZZ_CHECK(!row.fields.empty());
    ACMETRACE_FUZZ_CHECK(by_field || row.fields.size() <= acmetrace::core::CsvReader::kMaxFields);
    last_line = row.line;
    rows.push_back(std::move(row));
  }
  ACMETRACE_FUZZ_CHECK(reader.status().ok());
  skipped = reader.rows_skipped();
  return rows;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte picks the buffer size and the row limit; the rest is the file.
  const size_t chunk = 64 + (data[0] & 0x0F) * 61;
  const size_t max_row = 16 + (data[0] >> 4) * 257;
  const std::string path = acmetrace::fuzz::WriteInput("input.csv", data + 1, size - 1);
  int64_t skipped_rows = 0, skipped_fields = 0;
  const std::vector<Row> rows = ReadAll(path, chunk, max_row, false, skipped_rows);
  const std::vector<Row> by_field = ReadAll(path, chunk, max_row, true, skipped_fields);
  // ForEachField does not apply the field limit (its callers bound what they keep), so only the
  // kMaxFields rows could differ: the inputs here are far below 65,536 fields.
  ACMETRACE_FUZZ_CHECK(rows == by_field);
  ACMETRACE_FUZZ_CHECK(skipped_rows == skipped_fields);
  // The same file read in one buffer larger than any input (-max_len 64 KiB) gives the same rows (buffer boundaries change nothing).
  int64_t skipped_big = 0;
  const std::vector<Row> big = ReadAll(path, size_t{1} << 17, max_row, false, skipped_big);
  ACMETRACE_FUZZ_CHECK(rows == big);
  ACMETRACE_FUZZ_CHECK(skipped_big == skipped_rows);
  return 0;
}
