// A small binary encoding for processor state snapshots: fixed-width little-endian numbers and
// length-prefixed strings, read back with bounds checks (a truncated snapshot is an error, never a crash).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace acmetrace::processors {

/// Appends values to a byte string. Not thread-safe.
class StateWriter {
 public:
  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void I64(int64_t v) { Raw(&v, sizeof v); }
  void F64(double v) { Raw(&v, sizeof v); }
  void Str(std::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

/// Reads what a StateWriter wrote. After any read past the end, ok() is false and reads return 0/"".
/// Not thread-safe.
class StateReader {
 public:
  explicit StateReader(std::string_view in) : in_(in) {}
  uint64_t U64() { return Fixed<uint64_t>(); }
  int64_t I64() { return Fixed<int64_t>(); }
  double F64() { return Fixed<double>(); }
  std::string Str() {
    const uint64_t n = U64();
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  /// A count that must be plausible for the bytes left (each item takes at least min_item_bytes).
  uint64_t Count(size_t min_item_bytes = 1) {
    const uint64_t n = U64();
    if (!ok_ || (min_item_bytes > 0 && n > (in_.size() - pos_) / min_item_bytes)) {
      ok_ = false;
      return 0;
    }
    return n;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  void Fail() { ok_ = false; }

 private:
  template <typename T>
  T Fixed() {
    T v{};
    if (!ok_ || in_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace acmetrace::processors
