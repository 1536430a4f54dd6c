// Where a cluster goes among N places when no list says so: its consumer-group partition
// (GroupOwnership, a cluster not in process.clusters) and its file (the file transport).
#pragma once

#include <cstdint>
#include <string_view>

namespace acmetrace::pipeline {

/// FNV-1a of the cluster's name: stable across processes and builds (a place chosen by one
/// process is the place another finds). 32-bit, unlike synth's 64-bit HashName of the same shape
/// (producers/src/synth/random.h): instances of a group place clusters by it, so it stays as it was.
inline uint32_t ClusterHash(std::string_view cluster) {
  uint32_t h = 2166136261u;
  for (char c : cluster) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

}  // namespace acmetrace::pipeline
