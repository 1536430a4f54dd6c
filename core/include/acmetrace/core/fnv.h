// FNV-1a: a hash of a name that is the same in every process and build (where a cluster is placed,
// which random stream a name keys).
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace acmetrace::core {

/// 32- or 64-bit FNV-1a of text.
template <class UInt>
constexpr UInt Fnv1a(std::string_view text) {
  static_assert(std::is_same_v<UInt, uint32_t> || std::is_same_v<UInt, uint64_t>, "FNV-1a is 32 or 64 bits here");
  UInt h, prime;
  if constexpr (std::is_same_v<UInt, uint32_t>) {
    h = 2166136261u;
    prime = 16777619u;
  } else {
    h = 0xCBF29CE484222325ull;
    prime = 0x100000001B3ull;
  }
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= prime;
  }
  return h;
}

}  // namespace acmetrace::core
