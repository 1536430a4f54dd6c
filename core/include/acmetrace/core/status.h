// Status and Result: error values for the data path, where a bad row is a reported result, not a throw.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace acmetrace::core {

/// Success or an error message. Value type; thread-compatible.
class Status {
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

/// A value or the Status saying why there is none. Value type; thread-compatible.
template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : data_(std::move(status)) {}  // NOLINT

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
