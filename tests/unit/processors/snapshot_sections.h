// A processor snapshot of version 7 read section by section, as docs/processors.md lays it out (magic,
// version, cluster, the section count, each section's name, layout and bytes, a CRC-32 of all before
// it), and the older one-run layouts (versions 1-6) made from its sections: the tests build old
// snapshots from new ones by name, not by byte offsets.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors::testing {

struct SnapshotSections {
  bool ok = false;  // the whole snapshot read, the checksum matches
  std::string magic;
  uint64_t version = 0;
  std::string cluster;
  std::vector<std::pair<std::string, std::pair<uint64_t, std::string>>> sections;  // name, (layout, bytes), in order

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& s : sections) out.push_back(s.first);
    return out;
  }
  const std::string& Bytes(std::string_view name) const {
    static const std::string kNone;
    for (const auto& s : sections) {
      if (s.first == name) return s.second.second;
    }
    return kNone;
  }
};

inline uint32_t SnapshotCrc(std::string_view bytes) {
  return static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                                     static_cast<uInt>(bytes.size())));
}

inline SnapshotSections ReadSnapshotSections(std::string_view snapshot) {
  SnapshotSections out;
  if (snapshot.size() < 4) return out;
  const std::string_view body = snapshot.substr(0, snapshot.size() - 4);
  uint32_t stored = 0;
  std::memcpy(&stored, snapshot.data() + body.size(), sizeof stored);
  StateReader in(body);
  out.magic = in.Str();
  out.version = in.U64();
  out.cluster = in.Str();
  const uint64_t count = in.Count(24);
  for (uint64_t i = 0; i < count && in.ok(); ++i) {
    std::string name = in.Str();
    const uint64_t layout = in.U64();
    std::string bytes = in.Str();
    out.sections.push_back({std::move(name), {layout, std::move(bytes)}});
  }
  out.ok = in.ok() && in.at_end() && SnapshotCrc(body) == stored;
  return out;
}

/// The same state as an older build wrote it: the header at `version`, then the named sections' bytes
/// run together (no names, lengths or layouts), and from version 5 on the checksum.
inline std::string LegacySnapshot(const SnapshotSections& now, uint64_t version, const std::vector<std::string>& names) {
  StateWriter header;
  header.Str(now.magic);
  header(version, now.cluster);
  std::string bytes = header.Take();
  for (const std::string& name : names) bytes += now.Bytes(name);
  if (version >= 5) {
    const uint32_t crc = SnapshotCrc(bytes);
    bytes.append(reinterpret_cast<const char*>(&crc), sizeof crc);
  }
  return bytes;
}

}  // namespace acmetrace::processors::testing
