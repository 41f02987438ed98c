#include "core/alloc_table.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

namespace leakscope::internal {
namespace {

uint64_t table_size() { return alloc_table_live_blocks(); }

TEST(AllocTable, RandomInsertsAndRemovesMatchAReferenceMap) {
  std::mt19937_64 random(42);
  std::unordered_map<uintptr_t, uint64_t> reference;
  uint64_t base = table_size();
  for (int step = 0; step < 200000; ++step) {
    uintptr_t pointer = 0x100000 + (random() % 5000) * 16;  // dense keys make long probe runs
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

TEST(AllocTable, VisitSeesEveryLiveRecordOnce) {
  for (uintptr_t i = 1; i <= 1000; ++i) {
    AllocRecord unused;
    alloc_table_insert({0x7000000 + i * 32, i, static_cast<TripleId>(2), static_cast<Epoch>(3)}, &unused);
  }
  uint64_t total = 0;
  alloc_table_visit(
      [](const AllocRecord* records, uint32_t capacity, void* context) {
        for (uint32_t i = 0; i < capacity; ++i) {
          if (records[i].pointer != 0 && records[i].triple == static_cast<TripleId>(2)) {
            *static_cast<uint64_t*>(context) += records[i].size;
          }
        }
      },
      &total);
  EXPECT_EQ(total, 1000u * 1001u / 2);
  for (uintptr_t i = 1; i <= 1000; ++i) {
    AllocRecord record;
    ASSERT_TRUE(alloc_table_remove(0x7000000 + i * 32, &record));
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
