// Status and Result: error values for the data path, where a bad row is a reported result, not a throw.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace acmetrace::core {

/// Success or an error message. Must be used: dropping one is a compile error (cast to void, with
/// the reason in a comment, where ignoring it is right). Value type; thread-compatible.
class [[nodiscard]] Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  Status() = default;
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}

  bool failed_ = false;
  std::string message_;
};

/// A value or the Status saying why there is none. Must be used, like Status. Built from a Status,
/// that Status must be an error: a Result from Status::Ok() has neither a value nor a reason, a
/// programming error (as Envoy's and absl's StatusOr say). It cannot be told at compile time (a
/// Status is a run-time value), so it is refused at run time: the Result holds an error saying so
/// (kOkStatusError), never a value nobody set, and the caller's error path reports it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status)  // NOLINT: implicit by design
      : data_(status.ok() ? Status::Error(std::string(kOkStatusError)) : std::move(status)) {}
  /// The error a Result built from an Ok Status holds.
  static constexpr std::string_view kOkStatusError = "internal error: a Result was built from an Ok status";

  bool ok() const { return std::holds_alternative<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const Status& status() const {
    static const Status kOk = Status::Ok();
    return ok() ? kOk : std::get<Status>(data_);
  }

 private:
  std::variant<T, Status> data_;
};

}  // namespace acmetrace::core
