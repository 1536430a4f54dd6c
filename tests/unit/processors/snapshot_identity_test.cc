// A snapshot loads only where it belongs (its cluster, its consumer group, its input's partitions)
// and only as it was written (its checksum); the state file is refused before it is read when it is
// not a regular file of bounded size, and a failed save leaves no .tmp behind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "acmetrace/processors/state_store.h"
#include "acmetrace/processors/stream_processor.h"
#include "test_files.h"

namespace acmetrace::processors {
namespace {

constexpr int64_t kT0 = 1688169600000;  // 2023-07-01 00:00 UTC

class NullSink : public core::RecordSink {
 public:
  core::Status Write(const core::Record&) override { return core::Status::Ok(); }
  core::Status Flush() override { return core::Status::Ok(); }
};

core::Record Util(const std::string& cluster, int64_t ts_ms) {
  core::UtilSample s;
  s.cluster = cluster;
  s.node = "10.0.0.1";
  s.ts_ms = ts_ms;
  s.gpu.push_back({core::InternName("GPU_UTIL"), {50.0, 0.0}});
  return s;
}

// A snapshot of cluster after a few minutes of records on partitions, saved for group.
std::string SnapshotOf(const std::string& cluster, const std::vector<std::string>& partitions,
                       const std::string& group = "acmetrace-process") {
  NullSink sink;
  StreamProcessor p(ProcessOptions(), sink, nullptr);
  p.SetSnapshotGroup(group);
  for (const std::string& name : partitions) p.DeclarePartition(name);
  p.Own(cluster);
  for (int64_t i = 0; i < 40; ++i) {
    EXPECT_TRUE(p.Process(static_cast<int>(i % partitions.size()), i, Util(cluster, kT0 + i * 15'000)).ok());
  }
  return p.Snapshot(cluster).value();
}

const std::vector<std::string> kKafka = {"acme.jobs/0", "acme.util/0", "acme.util/1"};

struct Loader {
  NullSink sink;
  StreamProcessor p{ProcessOptions(), sink, nullptr};
  explicit Loader(const std::vector<std::string>& partitions = kKafka, const std::string& group = "acmetrace-process") {
    p.SetSnapshotGroup(group);
    for (const std::string& name : partitions) p.DeclarePartition(name);
  }
};

TEST(SnapshotIdentityTest, ASnapshotOfAnotherClusterIsRefused) {
  // A Seren snapshot copied as Kalos's loaded ("owns kalos (resumed ...)") and skipped Kalos's records.
  const std::string seren = SnapshotOf("seren", kKafka);
  Loader l;
  const core::Status s = l.p.Restore(seren, nullptr, "kalos");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "state snapshot is of cluster seren, not kalos");
  EXPECT_EQ(l.p.owned_count(), 0u);
  EXPECT_TRUE(l.p.Restore(seren, nullptr, "seren").ok());
}

TEST(SnapshotIdentityTest, ASnapshotOfAnotherInputIsRefused) {
  // One from stdin loaded under Kafka, and its partition "stdin" held the watermark back.
  const std::string from_stdin = SnapshotOf("seren", {"stdin"});
  Loader l;
  const core::Status s = l.p.Restore(from_stdin, nullptr, "seren");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "state snapshot of seren: partition stdin is not one of this input's (a snapshot of another input)");
  EXPECT_EQ(l.p.owned_count(), 0u);
  EXPECT_EQ(l.p.partition_count(), kKafka.size());
  // A topic with more partitions than when the snapshot was saved is the same input.
  Loader grown({"acme.jobs/0", "acme.util/0", "acme.util/1", "acme.util/2"});
  EXPECT_TRUE(grown.p.Restore(SnapshotOf("seren", kKafka), nullptr, "seren").ok());
}

TEST(SnapshotIdentityTest, ASnapshotOfAnotherGroupIsRefused) {
  const std::string other = SnapshotOf("seren", kKafka, "someone-else");
  Loader l;
  const core::Status s = l.p.Restore(other, nullptr, "seren");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "state snapshot of seren is of consumer group 'someone-else', not 'acmetrace-process'");
  EXPECT_EQ(l.p.owned_count(), 0u);
}

TEST(SnapshotIdentityTest, AnEndedWriterOfAnotherInputsPartitionIsRefused) {
  // Found by snapshot_fuzz: a partition named only among the ended writers was declared on loading,
  // and the snapshot saved from it then did not load.
  NullSink sink;
  StreamProcessor p(ProcessOptions(), sink, nullptr);
  for (const std::string& name : kKafka) p.DeclarePartition(name);
  p.Own("seren");
  ASSERT_TRUE(p.Process(1, 0, Util("seren", kT0)).ok());
  ASSERT_TRUE(p.EndMarker(2, 0, "seren").ok());
  std::string snapshot = p.Snapshot("seren").value();
  const size_t at = snapshot.rfind("acme.util/1");  // the ended writer's partition, after the detectors
  ASSERT_NE(at, std::string::npos);
  snapshot[at + 10] = '7';
  const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(snapshot.data()),
                                                   static_cast<uInt>(snapshot.size() - 4)));
  std::memcpy(snapshot.data() + snapshot.size() - 4, &crc, 4);
  Loader l;
  const core::Status s = l.p.Restore(snapshot, nullptr, "seren");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "state snapshot of seren: partition acme.util/7 is not one of this input's (a snapshot of another input)");
  EXPECT_EQ(l.p.partition_count(), kKafka.size());
}

TEST(SnapshotIdentityTest, EveryBitFlipIsRefused) {
  // 1 of 40 random bit flips loaded and changed 25 windows.
  const std::string snapshot = SnapshotOf("seren", kKafka);
  Loader l;
  int refused = 0, tried = 0;
  for (size_t bit = 0; bit < snapshot.size() * 8; bit += (bit < 512 ? 1 : 7)) {
    std::string flipped = snapshot;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    const core::Status s = l.p.Restore(flipped, nullptr, "seren");
    ++tried;
    if (!s.ok()) {
      ++refused;
      EXPECT_NE(s.message().find("snapshot"), std::string::npos) << s.message();
    } else {
      ADD_FAILURE() << "bit " << bit << " flipped and the snapshot loaded";
    }
    EXPECT_TRUE(l.p.Release("seren").ok());
  }
  EXPECT_EQ(refused, tried);
  // The body's flips are found by the checksum, with one clear message.
  std::string flipped = snapshot;
  flipped[snapshot.size() / 2] = static_cast<char>(flipped[snapshot.size() / 2] ^ 1);
  EXPECT_EQ(l.p.Restore(flipped, nullptr, "seren").message(),
            "state snapshot: checksum mismatch (the file is damaged or was altered)");
}

struct StateDir {
  std::string dir = TestDir();
  FileStateStore store{dir, "g"};
  StateDir() { EXPECT_TRUE(store.Open().ok()); }
};

TEST(FileStateStoreTest, ASymlinkToADeviceOrAFifoIsRefusedBeforeReading) {
  // A symlink to /dev/zero was read whole (16.8 GB, then bad_alloc); a FIFO hung for ever.
  StateDir d;
  ASSERT_EQ(::symlink("/dev/zero", d.store.PathOf("seren").c_str()), 0);
  core::Result<std::optional<std::string>> zero = d.store.Load("seren");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), d.store.PathOf("seren") + ": not a regular file: refused as a state snapshot");
  ASSERT_EQ(::mkfifo(d.store.PathOf("kalos").c_str(), 0600), 0);
  core::Result<std::optional<std::string>> fifo = d.store.Load("kalos");
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.status().message(), d.store.PathOf("kalos") + ": not a regular file: refused as a state snapshot");
  // A symlink to a regular file is a file.
  ASSERT_TRUE(d.store.Save("other", "bytes").ok());
  ASSERT_EQ(::symlink(d.store.PathOf("other").c_str(), d.store.PathOf("linked").c_str()), 0);
  core::Result<std::optional<std::string>> linked = d.store.Load("linked");
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(linked.value(), std::optional<std::string>("bytes"));
}

TEST(FileStateStoreTest, AFileLargerThanASnapshotMayBeIsRefusedBeforeReading) {
  StateDir d;
  const std::string path = d.store.PathOf("seren");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(FileStateStore::kMaxSnapshotBytes) + 1), 0);  // sparse: no disk used
  ::close(fd);
  core::Result<std::optional<std::string>> big = d.store.Load("seren");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("bytes, more than a state snapshot may have"), std::string::npos)
      << big.status().message();
}

TEST(FileStateStoreTest, AFailedSaveLeavesNoTmpAndTheOldSnapshot) {
  // A failed save left a 94 KB .tmp behind.
  StateDir d;
  // The snapshot's place is a directory with something in it: the rename fails after the write.
  std::filesystem::create_directories(d.store.PathOf("seren") + "/x");
  const core::Status s = d.store.Save("seren", std::string(100'000, 's'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot replace state snapshot"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(d.store.PathOf("seren") + ".tmp"));
  // The write itself failing (no room: the .tmp's place is taken by a directory) leaves nothing either.
  std::filesystem::create_directories(d.store.PathOf("kalos") + ".tmp/y");
  EXPECT_FALSE(d.store.Save("kalos", "k").ok());
  ASSERT_TRUE(d.store.Save("kalos2", "old").ok());
  EXPECT_EQ(d.store.Load("kalos2").value(), std::optional<std::string>("old"));
}

}  // namespace
}  // namespace acmetrace::processors
