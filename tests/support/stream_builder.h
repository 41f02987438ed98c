// File: stream_builder.h
//
// Builds .lsc streams byte by byte, for reader tests and the long-stream generator: the encodings
// of docs/FORMAT.md, written independently of the runtime's writer so the two check each other.
#ifndef LEAKSCOPE_TESTS_SUPPORT_STREAM_BUILDER_H_
#define LEAKSCOPE_TESTS_SUPPORT_STREAM_BUILDER_H_

#include <cstring>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "core/stream_format.h"

namespace leakscope::testing {

class Bytes {
 public:
  Bytes& varint(uint64_t value) {
    uint8_t buffer[internal::kMaxVarintSize];
    bytes_.append(reinterpret_cast<char*>(buffer), internal::varint_put(buffer, value) - buffer);
    return *this;
  }
  Bytes& signed_varint(int64_t value) { return varint(internal::zigzag_encode(value)); }
  Bytes& blob(const std::string& text) {
    varint(text.size());
    bytes_ += text;
    return *this;
  }
  Bytes& append(const Bytes& more) {
    bytes_ += more.bytes_;
    return *this;
  }
  // list() writes a list section: tag, length, element count, then the elements.
  Bytes& list(internal::SectionTag tag, uint64_t count, const Bytes& elements) {
    return section(tag, Bytes().varint(count).append(elements));
  }
  Bytes& section(internal::SectionTag tag, const Bytes& content) {
    varint(static_cast<uint64_t>(tag));
    varint(content.bytes_.size());
    bytes_ += content.bytes_;
    return *this;
  }
  const std::string& str() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

inline std::string frame(internal::FrameType type, const std::string& payload) {
  uint8_t header[internal::kFrameHeaderSize];
  internal::le32_put(header, internal::kFrameMarker);
  internal::le32_put(header + 4, static_cast<uint32_t>(type));
  internal::le32_put(header + 8, static_cast<uint32_t>(payload.size()));
  uint32_t crc = internal::crc32c_extend(internal::crc32c_extend(0, header + 4, 8), payload.data(), payload.size());
  internal::le32_put(header + 12, crc);
  return std::string(reinterpret_cast<char*>(header), sizeof(header)) + payload;
}

inline std::string file_header() {
  uint8_t header[internal::kFileHeaderSize] = {};
  std::memcpy(header, internal::kFileMagic, sizeof(internal::kFileMagic));
  internal::le32_put(header + 8, internal::kFormatVersion);
  return std::string(reinterpret_cast<char*>(header), sizeof(header));
}

inline std::string process_frame(uint64_t pid = 4242, const std::string& exe = "/usr/bin/app") {
  Bytes process;
  process.blob("0.1.0").varint(pid).varint(1).varint(0).blob(exe).varint(2).blob("app").blob("--x");
  process.varint(1700000000000000000ull).varint(1000000000).varint(32).varint(4096).blob("depth=32").varint(0);
  return frame(internal::FrameType::kProcess, process.str());
}

// info() is an INFO section: epoch, time, why the snapshot was taken, and memory figures derived
// from `rss`.
inline Bytes info(uint32_t epoch, uint64_t time_ns, internal::SnapshotReason reason, bool final, uint64_t rss = 4096) {
  Bytes section;
  section.varint(epoch).varint(time_ns).varint(0).varint(static_cast<uint64_t>(reason)).varint(0).varint(final ? 1 : 0);
  for (int i = 0; i < 9; ++i) section.varint(rss * (i + 1));
  return section;
}

// info() of a periodic snapshot, or of the final one at exit.
inline Bytes info(uint32_t epoch, uint64_t time_ns, bool final, uint64_t rss = 4096) {
  return info(epoch, time_ns, final ? internal::SnapshotReason::kExit : internal::SnapshotReason::kPeriodic, final, rss);
}

// What one triple lost, as a LEAK_CHECK section lists it.
struct LostEntry {
  uint64_t triple = 0;
  uint64_t bytes = 0, blocks = 0, indirect_bytes = 0, indirect_blocks = 0;
};

// leak_check() is a LEAK_CHECK section: a scan that `trigger` started at `time_ns`, stopped 3
// threads for 2 ms (and missed `missed`), scanned 100 blocks of 8000 bytes from 4096 bytes of
// roots in 64 KiB of its own, and found `entries` lost (written as id differences, in the order
// given).
inline Bytes leak_check(internal::LeakCheckTrigger trigger, uint64_t time_ns, const std::vector<LostEntry>& entries,
                        uint64_t missed = 0) {
  Bytes section;
  section.varint(static_cast<uint64_t>(trigger)).varint(time_ns).varint(2000000).varint(3).varint(missed);
  section.varint(100).varint(8000).varint(4096).varint(65536).varint(0).varint(entries.size());
  uint64_t previous = 0;
  for (const LostEntry& entry : entries) {
    section.varint(entry.triple - previous).varint(entry.bytes).varint(entry.blocks);
    section.varint(entry.indirect_bytes).varint(entry.indirect_blocks);
    previous = entry.triple;
  }
  return section;
}

// many_paths() is a stream of one snapshot in which each of `paths` call paths (one frame each)
// holds (its number) blocks of 100 bytes, from one thread and task.
inline std::string many_paths(uint64_t paths) {
  Bytes stacks, sites, triples, counters;
  stacks.varint(paths);
  sites.varint(paths);
  triples.varint(paths);
  counters.varint(paths);
  for (uint64_t path = 1; path <= paths; ++path) {
    // Each head frame is written as the difference from the previous stack's.
    stacks.varint(1).varint(1).signed_varint(path == 1 ? 0x401000 : 0x10).varint(0);
    sites.varint(1).varint(0).signed_varint(1);
    triples.varint(1).signed_varint(1).varint(1).varint(1);
    counters.varint(1).varint(path).varint(100 * path).varint(0).varint(0).varint(0);
  }
  Bytes snapshot;
  snapshot.section(internal::SectionTag::kInfo, info(0, 1000000000, true));
  snapshot.section(internal::SectionTag::kStacks, stacks);
  snapshot.section(internal::SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  snapshot.section(internal::SectionTag::kTasks, Bytes().varint(1).varint(1).varint(7).blob("request"));
  snapshot.section(internal::SectionTag::kSites, sites);
  snapshot.section(internal::SectionTag::kTriples, triples);
  snapshot.section(internal::SectionTag::kCounters, counters);
  return file_header() + process_frame() + frame(internal::FrameType::kSnapshot, snapshot.str());
}

}  // namespace leakscope::testing

#endif  // LEAKSCOPE_TESTS_SUPPORT_STREAM_BUILDER_H_
