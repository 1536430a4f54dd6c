// Reads the IPMI power files (GPU_AB_Power.csv, GPU_C_Power.csv, CPU_D_Power.csv) as PowerSamples.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/csv_reader.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::producers {

/// The server model of a row: GPU_AB_Power.csv rows are GPU_A, or GPU_B where MEM_Power is empty
/// (type B servers report no memory power); other files give their name without "_Power".
std::string PowerModelOfFile(std::string_view file_name);

/// Reads every IPMI file of a cluster and merges their rows by Time. Each row becomes one
/// PowerSample holding the row's non-empty numeric columns. Not thread-safe.
class PowerSource : public RecordSource {
 public:
  PowerSource(std::string cluster, const std::vector<std::string>& files, core::InputErrors& errors,
              TimeRange range);

  const core::Record* Next() override;
  int64_t bytes_read() const override;
  int64_t bytes_total() const override { return bytes_total_; }
  core::Status status() const override { return core::Status::Ok(); }
  /// Rows whose Time was earlier than a row already emitted from the same file (emitted anyway).
  int64_t out_of_order() const { return out_of_order_; }

 private:
  struct File {
    std::string model;  // "" for GPU_AB (decided per row)
    core::CsvReader csv;
    int time_column = -1;
    int mem_power_column = -1;
    std::vector<std::string_view> names;  // interned column names ("" = not a power column)
    std::vector<std::string_view> fields;
    core::Record record{core::PowerSample{}};
    bool live = false;
    int64_t last_ts_ms = std::numeric_limits<int64_t>::min();
  };
  bool Advance(File& file);

  std::string cluster_;
  core::InputErrors& errors_;
  TimeRange range_;
  std::vector<std::unique_ptr<File>> files_;
  File* emitted_ = nullptr;  // its record was handed out; advance it on the next call
  int64_t bytes_total_ = 0;
  int64_t out_of_order_ = 0;
};

}  // namespace acmetrace::producers
