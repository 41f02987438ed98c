#include "core/alloc_table.h"

#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

namespace leakscope::internal {
namespace {

uint64_t table_size() { return alloc_table_live_blocks(); }

// insert_and_remove_at_random() runs 200 000 random inserts and removes over 5000 dense addresses
// from `first`, `apart` bytes apart, against a reference map, then empties the table again.
void insert_and_remove_at_random(uintptr_t first, uintptr_t apart) {
  std::mt19937_64 random(42);
  std::unordered_map<uintptr_t, uint64_t> reference;
  uint64_t base = table_size();
  for (int step = 0; step < 200000; ++step) {
    uintptr_t pointer = first + (random() % 5000) * apart;  // dense keys make long probe runs
    AllocRecord record;
    if (random() % 3 != 0) {
      AllocRecord replaced;
      bool had = alloc_table_insert({pointer, step + 1u, static_cast<TripleId>(1), static_cast<Epoch>(0)}, &replaced);
      EXPECT_EQ(had, reference.count(pointer) == 1);
      if (had) EXPECT_EQ(replaced.size, reference[pointer]);
      reference[pointer] = step + 1u;
    } else {
      bool removed = alloc_table_remove(pointer, &record);
      ASSERT_EQ(removed, reference.count(pointer) == 1) << "step " << step;
      if (removed) {
        EXPECT_EQ(record.size, reference[pointer]);
        reference.erase(pointer);
      }
    }
  }
  EXPECT_EQ(table_size() - base, reference.size());
  for (const auto& [pointer, size] : reference) {
    AllocRecord record;
    ASSERT_TRUE(alloc_table_remove(pointer, &record));
    EXPECT_EQ(record.size, size);
  }
  EXPECT_EQ(table_size(), base);
}

// Granules fill, grow their records' room past their entry, empty and shrink back.
TEST(AllocTable, RandomInsertsAndRemovesInGranulesMatchAReferenceMap) { insert_and_remove_at_random(0x100000, 16); }

// 8-byte aligned addresses go to the side table.
TEST(AllocTable, RandomInsertsAndRemovesInTheSideTableMatchAReferenceMap) {
  insert_and_remove_at_random(0x300008, 16);
}

TEST(AllocTable, VisitSeesEveryLiveRecordOnce) {
  for (uintptr_t i = 1; i <= 1000; ++i) {
    AllocRecord unused;
    alloc_table_insert({0x7000000 + i * 32, i, static_cast<TripleId>(2), static_cast<Epoch>(3)}, &unused);
  }
  uint64_t total = 0;
  alloc_table_visit(
      [](const AllocRecord* records, uint32_t count, void* context) {
        for (uint32_t i = 0; i < count; ++i) {
          EXPECT_NE(records[i].pointer, 0u);
          if (records[i].triple == static_cast<TripleId>(2)) *static_cast<uint64_t*>(context) += records[i].size;
        }
      },
      &total);
  EXPECT_EQ(total, 1000u * 1001u / 2);
  for (uintptr_t i = 1; i <= 1000; ++i) {
    AllocRecord record;
    ASSERT_TRUE(alloc_table_remove(0x7000000 + i * 32, &record));
  }
}

// Records at the edges of each field, in granules and in the side table (8-byte aligned); all
// must come back whole.
TEST(AllocTable, RecordsAtTheEdgesOfEveryFieldComeBackWhole) {
  const AllocRecord records[] = {
      {0x7fff'ffff'fff0, 0xffff'ffff, static_cast<TripleId>((1u << 26) - 1), static_cast<Epoch>((1u << 27) - 1)},
      {0x8000'0000'0000, 1, static_cast<TripleId>(1), static_cast<Epoch>(1)},          // address past 2^47
      {0x5000'0008, 24, static_cast<TripleId>(1), static_cast<Epoch>(1)},              // 8-byte aligned
      {0x5000'0010, 0x1'0000'0000, static_cast<TripleId>(1), static_cast<Epoch>(1)},  // 4 GiB
      {0x5000'0020, 16, static_cast<TripleId>(1u << 26), static_cast<Epoch>(1)},       // triple id past 26 bits
      {0x5000'0030, 16, static_cast<TripleId>(7), static_cast<Epoch>(0xffff'fffe)},    // epoch past 27 bits
      {0x5000'0040, 48, static_cast<TripleId>(9), static_cast<Epoch>(0x1f'ffff)},      // low epoch bits only
  };
  uint64_t base = alloc_table_live_blocks();
  for (const AllocRecord& record : records) {
    AllocRecord unused;
    EXPECT_FALSE(alloc_table_insert(record, &unused));
  }
  EXPECT_EQ(alloc_table_live_blocks() - base, std::size(records));
  for (const AllocRecord& record : records) {
    AllocRecord removed{};
    ASSERT_TRUE(alloc_table_remove(record.pointer, &removed)) << std::hex << record.pointer;
    EXPECT_EQ(removed.pointer, record.pointer);
    EXPECT_EQ(removed.size, record.size);
    EXPECT_EQ(removed.triple, record.triple);
    EXPECT_EQ(removed.birth, record.birth);
    EXPECT_FALSE(alloc_table_remove(record.pointer, &removed));
  }
  EXPECT_EQ(alloc_table_live_blocks(), base);
}

// An address whose free was never seen comes back as replaced, whatever each record holds.
TEST(AllocTable, ReuseOfAnAddressReplacesTheStaleRecord) {
  uintptr_t pointer = 0x6000'0000;
  AllocRecord small{pointer, 100, static_cast<TripleId>(3), static_cast<Epoch>(4)};
  AllocRecord huge{pointer, uint64_t{5} << 32, static_cast<TripleId>(5), static_cast<Epoch>(6)};
  AllocRecord replaced{};
  EXPECT_FALSE(alloc_table_insert(small, &replaced));
  EXPECT_TRUE(alloc_table_insert(huge, &replaced));
  EXPECT_EQ(replaced.size, 100u);
  EXPECT_TRUE(alloc_table_insert(small, &replaced));
  EXPECT_EQ(replaced.size, uint64_t{5} << 32);
  EXPECT_EQ(replaced.triple, static_cast<TripleId>(5));
  AllocRecord removed{};
  ASSERT_TRUE(alloc_table_remove(pointer, &removed));
  EXPECT_EQ(removed.size, 100u);
  EXPECT_FALSE(alloc_table_remove(pointer, &removed));
}

// Blocks 48 bytes apart: 21 or 22 start in each 1 KiB granule, whose records (16 bytes each) take
// room for 32, beside the granule's 64-byte entry in shards that double at 7/8 load.
TEST(AllocTable, ALiveBlockCostsItsRecordsRoomAndAShareOfItsGranulesEntry) {
  uint64_t base_blocks = alloc_table_live_blocks(), base_bytes = alloc_table_slot_bytes();
  constexpr uintptr_t kBlocks = 1 << 20;
  for (uintptr_t i = 0; i < kBlocks; ++i) {
    AllocRecord unused;
    alloc_table_insert({0x2000'0000'0000 + i * 48, 32, static_cast<TripleId>(1), static_cast<Epoch>(0)}, &unused);
  }
  double per_block = static_cast<double>(alloc_table_slot_bytes() - base_bytes) /
                     static_cast<double>(alloc_table_live_blocks() - base_blocks);
  constexpr double kBlocksPerGranule = 1024.0 / 48;
  EXPECT_GE(per_block, (32 * 16 + 64 * 8 / 7.0) / kBlocksPerGranule);
  EXPECT_LE(per_block, (32 * 16 + 64 * 16 / 7.0) / kBlocksPerGranule);
  for (uintptr_t i = 0; i < kBlocks; ++i) {
    AllocRecord record;
    ASSERT_TRUE(alloc_table_remove(0x2000'0000'0000 + i * 48, &record));
  }
}

TEST(AllocTable, ConcurrentThreadsKeepExactCounts) {
  uint64_t base = table_size();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t] {
      for (int round = 0; round < 20; ++round) {
        for (uintptr_t i = 0; i < 2000; ++i) {
          AllocRecord unused;
          alloc_table_insert({0x10000000 + (t * 100000 + i) * 16, 1, static_cast<TripleId>(1), static_cast<Epoch>(0)}, &unused);
        }
        for (uintptr_t i = 0; i < 2000; ++i) {
          AllocRecord record;
          if (i % 2 == 0 || round + 1 < 20) alloc_table_remove(0x10000000 + (t * 100000 + i) * 16, &record);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(table_size() - base, 8u * 1000u);
}

}  // namespace
}  // namespace leakscope::internal
