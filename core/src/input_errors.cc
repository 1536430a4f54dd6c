// InputErrors: counted, printed, never silent.
#include "acmetrace/core/input_errors.h"

#include "acmetrace/core/log.h"

namespace acmetrace::core {

void InputErrors::Report(std::string_view cluster, std::string_view kind, std::string_view file,
                         int64_t line, std::string_view field, std::string_view reason) {
  std::string text;
  text.reserve(file.size() + field.size() + reason.size() + 24);
  text += file;
  text.push_back(':');
  text += std::to_string(line);
  text += ": ";
  text += field;
  text += ": ";
  text += reason;
  Count(cluster, kind, text);
}

void InputErrors::ReportFile(std::string_view cluster, std::string_view kind, std::string_view file,
                             std::string_view reason) {
  std::string text(file);
  text += ": ";
  text += reason;
  Count(cluster, kind, text);
}

void InputErrors::Count(std::string_view cluster, std::string_view kind, const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[{std::string(cluster), std::string(kind)}];
  ++total_;
  if (strict_) must_stop_ = true;
  if (first_.empty()) first_ = line;
  if (out_ != nullptr && total_ <= max_printed_) LogTo(out_, LogLevel::kWarn, "input", line);
}

int64_t InputErrors::total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

std::map<std::pair<std::string, std::string>, int64_t> InputErrors::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

bool InputErrors::must_stop() const { return must_stop_.load(std::memory_order_relaxed); }

std::string InputErrors::first() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_;
}

void InputErrors::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (out_ != nullptr && total_ > max_printed_) {
    LogTo(out_, LogLevel::kWarn, "input",
          std::to_string(total_ - max_printed_) + " more input errors not shown");
  }
}

}  // namespace acmetrace::core
