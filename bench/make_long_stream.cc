// Writes a long synthetic .lsc stream, as a process running for hours would leave, to measure and
// test `leakscope report` on it:
//   make_long_stream OUT [--snapshots N] [--sites N] [--seed N]
// Sites come in three kinds, told apart by the address of their first frame:
//   leak  (5%,  frames[0] in 0x10000000..): 1..4 blocks every snapshot, never freed
//   cache (20%, frames[0] in 0x30000000..): blocks live for 5 snapshots, then freed
//   churn (75%, frames[0] in 0x50000000..): blocks freed within their snapshot
// Every snapshot updates the counters of the sites active in it (leaks and caches each time, a
// rotating tenth of the churning ones) and the births those updates change.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/stream_builder.h"

namespace {

using leakscope::internal::FrameType;
using leakscope::internal::SectionTag;
using leakscope::testing::Bytes;

constexpr uint64_t kLeakBase = 0x10000000, kCacheBase = 0x30000000, kChurnBase = 0x50000000;
constexpr int kCacheLifetime = 5;
constexpr int kBlockSize = 512;

enum class Kind { kLeak, kCache, kChurn };

struct SiteState {
  Kind kind;
  std::vector<int> born_per_epoch;  // cache: blocks born in each recent epoch
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_long_stream OUT [--snapshots N] [--sites N] [--seed N]\n");
    return 2;
  }
  int snapshots = 3600, site_count = 2000;
  unsigned seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--snapshots") == 0) snapshots = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--sites") == 0) site_count = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--seed") == 0) seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
  }
  FILE* out = std::fopen(argv[1], "wb");
  if (out == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  std::mt19937 random(seed);
  std::string head = leakscope::testing::file_header() + leakscope::testing::process_frame();
  std::fwrite(head.data(), 1, head.size(), out);

  std::vector<SiteState> sites(static_cast<size_t>(site_count) + 1);
  int leaks = 0, caches = 0;
  for (int id = 1; id <= site_count; ++id) {
    int roll = static_cast<int>(random() % 100);
    sites[id].kind = roll < 5 ? Kind::kLeak : roll < 25 ? Kind::kCache : Kind::kChurn;
    leaks += sites[id].kind == Kind::kLeak;
    caches += sites[id].kind == Kind::kCache;
  }
  size_t bytes_written = head.size();
  for (int epoch = 0; epoch < snapshots; ++epoch) {
    Bytes payload;
    uint64_t rss = (64ull << 20) + static_cast<uint64_t>(epoch) * leaks * 2 * kBlockSize;
    payload.section(SectionTag::kInfo, leakscope::testing::info(static_cast<uint32_t>(epoch),
                                                               (static_cast<uint64_t>(epoch) + 1) * 1000000000ull,
                                                               epoch + 1 == snapshots, rss));
    if (epoch == 0) {
      Bytes stacks, threads, site_list, triples;
      uint64_t previous_stack[20] = {};
      for (int id = 1; id <= site_count; ++id) {
        uint64_t base = sites[id].kind == Kind::kLeak ? kLeakBase : sites[id].kind == Kind::kCache ? kCacheBase : kChurnBase;
        // Every stack's 20 frames are given one by one (no tail node), each a difference from the
        // previous stack's frame at its depth (from the previous frame in the first stack).
        stacks.varint(1).varint(20);
        uint64_t previous = 0;
        for (int frame = 0; frame < 20; ++frame) {
          uint64_t address = base + static_cast<uint64_t>(id) * 0x100 + static_cast<uint64_t>(frame) * 0x1000000;
          if (id > 1) previous = previous_stack[frame];
          stacks.signed_varint(static_cast<int64_t>(address - previous));
          previous = previous_stack[frame] = address;
        }
        stacks.varint(0);
        site_list.varint(1).varint(0).signed_varint(1);
        triples.varint(1).signed_varint(1).varint(1 + id % 8).varint(0);
      }
      for (int t = 1; t <= 8; ++t) threads.varint(static_cast<uint64_t>(t)).varint(1000 + t).blob("worker-" + std::to_string(t)).varint(0);
      uint64_t count = static_cast<uint64_t>(site_count);
      payload.list(SectionTag::kStacks, count, stacks).list(SectionTag::kThreads, 8, threads);
      payload.list(SectionTag::kSites, count, site_list).list(SectionTag::kTriples, count, triples);
    }
    Bytes counters, births;
    uint64_t counter_entries = 0, birth_entries = 0;
    int previous_id = 0;
    for (int id = 1; id <= site_count; ++id) {
      SiteState& site = sites[id];
      if (site.kind == Kind::kChurn && (id + epoch) % 10 != 0) continue;
      int born = 1 + static_cast<int>(random() % 4);
      int freed = site.kind == Kind::kChurn ? born : 0;
      if (site.kind == Kind::kCache) {
        site.born_per_epoch.push_back(born);
        if (site.born_per_epoch.size() > kCacheLifetime) {
          freed = site.born_per_epoch.front();
          site.born_per_epoch.erase(site.born_per_epoch.begin());
          births.varint(static_cast<uint64_t>(id)).varint(static_cast<uint64_t>(epoch - kCacheLifetime));
          births.signed_varint(-static_cast<int64_t>(freed) * kBlockSize).signed_varint(-freed);
          ++birth_entries;
        }
      }
      counters.varint(static_cast<uint64_t>(id - previous_id)).varint(static_cast<uint64_t>(born));
      counters.varint(static_cast<uint64_t>(born) * kBlockSize).varint(static_cast<uint64_t>(freed));
      counters.varint(static_cast<uint64_t>(freed) * kBlockSize).varint(0);
      previous_id = id;
      ++counter_entries;
      if (site.kind != Kind::kChurn) {
        births.varint(static_cast<uint64_t>(id)).varint(static_cast<uint64_t>(epoch));
        births.signed_varint(static_cast<int64_t>(born) * kBlockSize).signed_varint(born);
        ++birth_entries;
      }
    }
    payload.list(SectionTag::kCounters, counter_entries, counters).list(SectionTag::kBirths, birth_entries, births);
    std::string framed = leakscope::testing::frame(FrameType::kSnapshot, payload.str());
    std::fwrite(framed.data(), 1, framed.size(), out);
    bytes_written += framed.size();
  }
  std::fclose(out);
  std::printf("snapshots=%d sites=%d leaks=%d caches=%d bytes=%zu\n", snapshots, site_count, leaks, caches, bytes_written);
  return 0;
}
