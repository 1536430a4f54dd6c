// Where a cluster goes among N places when no list says so: its consumer-group partition
// (GroupOwnership, a cluster not in process.clusters) and its file (the file transport).
#pragma once

#include <cstdint>
#include <string_view>

#include "acmetrace/core/fnv.h"

namespace acmetrace::pipeline {

/// FNV-1a of the cluster's name: stable across processes and builds (a place chosen by one
/// process is the place another finds). 32-bit, unlike synth's 64-bit HashName: instances of a group
/// place clusters by it, so it stays as it was.
inline uint32_t ClusterHash(std::string_view cluster) { return core::Fnv1a<uint32_t>(cluster); }

}  // namespace acmetrace::pipeline
