// The one-line accessors of classes that guard their state with one mutex.
#pragma once

#include <mutex>

namespace acmetrace::core {

/// A copy of value, read while holding mutex (e.g. `return ReadLocked(mutex_, paused_);`).
template <class T>
T ReadLocked(std::mutex& mutex, const T& value) {
  std::lock_guard<std::mutex> lock(mutex);
  return value;
}

}  // namespace acmetrace::core
