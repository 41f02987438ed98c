#include "core/intern_table.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace leakscope::internal {
namespace {

struct NumberEntry {
  NumberEntry* next;
  uint64_t hash;
  uint32_t id;
  uint64_t number;
};

NumberEntry* intern_number(InternTable<NumberEntry>& table, uint64_t number) {
  return table.find_or_insert(
      hash_mix(number), [&](const NumberEntry* entry) { return entry->number == number; },
      [&]() -> NumberEntry* {
        auto* made = static_cast<NumberEntry*>(internal_alloc(sizeof(NumberEntry)));
        if (made != nullptr) made->number = number;
        return made;
      });
}

TEST(InternTable, GrowsWhileThreadsInternAndFindAndEveryKeyKeepsOneEntry) {
  static InternTable<NumberEntry> table;
  ASSERT_TRUE(table.init(2));
  constexpr int kThreads = 4;
  constexpr uint64_t kNumbers = 50000;
  std::vector<std::vector<NumberEntry*>> seen(kThreads, std::vector<NumberEntry*>(kNumbers));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &seen] {
      for (uint64_t i = 0; i < kNumbers; ++i) {
        uint64_t number = (i * 7919 + static_cast<uint64_t>(t) * 104729) % kNumbers;
        seen[t][number] = intern_number(table, number);
        // Lookups of keys interned earlier, racing with grows: a hit is always the right entry.
        uint64_t earlier = number / 2;
        NumberEntry* found =
            table.find(hash_mix(earlier), [&](const NumberEntry* entry) { return entry->number == earlier; });
        if (found != nullptr) ASSERT_EQ(found->number, earlier);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (uint64_t number = 0; number < kNumbers; ++number) {
    ASSERT_NE(seen[0][number], nullptr);
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(seen[t][number], seen[0][number]);
    EXPECT_EQ(table.get(seen[0][number]->id), seen[0][number]);
    // Once the grows are over, find() sees everything.
    EXPECT_EQ(table.find(hash_mix(number), [&](const NumberEntry* entry) { return entry->number == number; }),
              seen[0][number]);
  }
  EXPECT_EQ(table.end_id(), kNumbers + 1);
  EXPECT_GE(table.bucket_count(), kNumbers / 4);  // grown from 4 buckets, at most 4 entries per bucket
  EXPECT_LE(table.bucket_count(), kNumbers * 4);
}

}  // namespace
}  // namespace leakscope::internal
