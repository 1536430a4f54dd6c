// Totals and the first error over the parts of a composite source (EventStream's sources,
// UtilizationSource's readers).
#pragma once

#include <cstdint>
#include <functional>

#include "acmetrace/core/status.h"

namespace acmetrace::producers {

/// The sum of count over parts (a range of pointers), e.g. SumOverParts(readers_, &Reader::bytes_read).
template <class Parts, class Count>
int64_t SumOverParts(const Parts& parts, Count count) {
  int64_t total = 0;
  for (const auto& part : parts) total += std::invoke(count, *part);
  return total;
}

/// The first part's status that is not ok, else Ok.
template <class Parts>
core::Status FirstPartError(const Parts& parts) {
  for (const auto& part : parts) {
    if (core::Status st = part->status(); !st.ok()) return st;
  }
  return core::Status::Ok();
}

}  // namespace acmetrace::producers
