#include "core/parked_blocks.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace leakscope::internal {
namespace {

std::set<uintptr_t>& in_use_blocks() {
  static std::set<uintptr_t> blocks;
  return blocks;
}

bool in_use(uintptr_t block) { return in_use_blocks().count(block) != 0; }

std::vector<ParkedBlock> take_all(size_t batch) {
  std::vector<ParkedBlock> taken;
  std::vector<ParkedBlock> out(batch);
  for (;;) {
    size_t count = parked_blocks_take_in_use(out.data(), batch);
    taken.insert(taken.end(), out.begin(), out.begin() + static_cast<long>(count));
    if (count < batch) return taken;
  }
}

// Blocks 48 bytes apart, as a pool's, many of them sharing a home slot: removals in the middle of
// probe runs must leave every other block findable.
uintptr_t block_at(size_t i) { return 0x7f0000000000 + i * 48; }

TEST(ParkedBlocks, TakesExactlyTheBlocksInUseAgainWithTheTriplesTheyHad) {
  parked_blocks_enable(in_use);
  constexpr size_t kBlocks = 20000;
  for (size_t i = 0; i < kBlocks; ++i) {
    ASSERT_TRUE(parked_blocks_add(ParkedBlock{block_at(i), static_cast<TripleId>(i + 1), static_cast<TripleId>(7)}));
  }
  std::set<uintptr_t> expected;
  for (size_t i = 0; i < kBlocks; ++i) {
    if (i % 3 == 0) {
      parked_blocks_remove(block_at(i));  // freed while parked
    } else if (i % 5 == 0) {
      in_use_blocks().insert(block_at(i));
      expected.insert(block_at(i));
    }
  }
  in_use_blocks().insert(block_at(3));  // in use again, but no longer parked: not taken
  std::vector<ParkedBlock> taken = take_all(100);
  std::set<uintptr_t> got;
  for (const ParkedBlock& parked : taken) {
    EXPECT_TRUE(got.insert(parked.block).second) << "taken twice";
    EXPECT_EQ(raw(parked.own), (parked.block - block_at(0)) / 48 + 1);
    EXPECT_EQ(raw(parked.parked), 7u);
  }
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(take_all(100).empty()) << "each is taken once";
  // The rest are still there: removing each leaves nothing to take once all are in use.
  for (size_t i = 0; i < kBlocks; ++i) {
    if (i % 3 != 0 && i % 5 != 0) parked_blocks_remove(block_at(i));
  }
  for (size_t i = 0; i < kBlocks; ++i) in_use_blocks().insert(block_at(i));
  EXPECT_TRUE(take_all(100).empty());
  in_use_blocks().clear();
}

TEST(ParkedBlocks, RefusesBlocksPastSevenEighthsOfItsRoom) {
  parked_blocks_enable(in_use);
  size_t added = 0;
  while (parked_blocks_add(ParkedBlock{block_at(added), static_cast<TripleId>(1), static_cast<TripleId>(2)})) ++added;
  EXPECT_EQ(added, (size_t{1} << 17) / 8 * 7);
  // Parking the same block again replaces it, full or not.
  EXPECT_TRUE(parked_blocks_add(ParkedBlock{block_at(0), static_cast<TripleId>(3), static_cast<TripleId>(2)}));
  for (size_t i = 0; i < added; ++i) parked_blocks_remove(block_at(i));
  EXPECT_TRUE(parked_blocks_add(ParkedBlock{block_at(0), static_cast<TripleId>(1), static_cast<TripleId>(2)}));
  parked_blocks_remove(block_at(0));
}

}  // namespace
}  // namespace leakscope::internal
