// InputErrors: counted, printed, never silent.
#include "acmetrace/core/input_errors.h"

#include "acmetrace/core/log.h"

namespace acmetrace::core {

std::string QuotedValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string_view shown = value.substr(0, kMaxEchoedValueBytes);
  std::string out = "'";
  out.reserve(shown.size() + 32);
  for (char c : shown) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  if (value.size() > shown.size()) out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

void InputErrors::Report(std::string_view cluster, std::string_view kind, std::string_view file,
                         int64_t line, std::string_view field, std::string_view reason) {
  std::string text;
  text.reserve(file.size() + field.size() + reason.size() + 24);
  text += file;
  text.push_back(':');
  text += std::to_string(line);
  text += ": ";
  if (!field.empty()) {
    // A field is a header cell, which a hostile file can make as long as a value.
    text += field.substr(0, kMaxEchoedValueBytes);
    if (field.size() > kMaxEchoedValueBytes) text += "...";
    text += ": ";
  }
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
