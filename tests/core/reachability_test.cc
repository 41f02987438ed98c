#include "core/reachability.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/radix_sort.h"

namespace leakscope::internal {
namespace {

// A heap of blocks in real memory (the scan reads them), each `words` 8-byte words, 16-aligned.
class Heap {
 public:
  uintptr_t* add(size_t words, uint32_t triple = 0, bool readable = true) {
    storage_.push_back(std::make_unique<uintptr_t[]>(words + 2));
    uintptr_t* block = storage_.back().get();
    if (reinterpret_cast<uintptr_t>(block) % 16 != 0) block += 1;
    std::fill(block, block + words, 0);
    blocks_.push_back({reinterpret_cast<uintptr_t>(block), words * 8, triple, BlockState::kUnreached, readable});
    return block;
  }

  // mark() runs the scan over the given roots and returns each block's state, in the order added.
  std::vector<BlockState> mark(const std::vector<uintptr_t>& roots, bool allocator_data = false) {
    std::vector<ScanBlock> sorted = blocks_;
    std::vector<ScanBlock> scratch(sorted.size());
    std::vector<size_t> counters(kRadixCounters);
    sort_scan_blocks(sorted.data(), scratch.data(), sorted.size(), counters.data());
    std::vector<uint32_t> frontier(sorted.size());
    std::vector<uintptr_t> begins(sorted.size());
    ReachabilityScan scan(sorted.data(), sorted.size(), frontier.data(), begins.data());
    auto begin = reinterpret_cast<uintptr_t>(roots.data());
    scan.scan_root(begin, begin + roots.size() * sizeof(uintptr_t), allocator_data);
    scan.flood();
    scan.classify_lost();
    std::vector<BlockState> states;
    for (const ScanBlock& block : blocks_) {
      auto found = std::find_if(sorted.begin(), sorted.end(), [&](const ScanBlock& s) { return s.begin == block.begin; });
      states.push_back(found->state);
    }
    return states;
  }

 private:
  std::vector<std::unique_ptr<uintptr_t[]>> storage_;
  std::vector<ScanBlock> blocks_;
};

uintptr_t address(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

constexpr BlockState kLost = BlockState::kUnreached;
constexpr BlockState kReachable = BlockState::kReachable;
constexpr BlockState kIndirect = BlockState::kIndirectlyLost;

TEST(Reachability, ABlockPointingOnlyAtItselfIsDirectlyLost) {
  Heap heap;
  uintptr_t* self = heap.add(4);
  self[0] = address(self);
  EXPECT_EQ(heap.mark({}), (std::vector<BlockState>{kLost}));
}

TEST(Reachability, WhatARootReachesIsReachableTransitively) {
  Heap heap;
  uintptr_t* first = heap.add(2);
  uintptr_t* second = heap.add(2);
  uintptr_t* third = heap.add(2);
  first[1] = address(second);
  second[0] = address(third);
  EXPECT_EQ(heap.mark({address(first)}), (std::vector<BlockState>{kReachable, kReachable, kReachable}));
}

TEST(Reachability, ALostParentMakesItsChildrenIndirectlyLostAndACycleIsTwoIndirectLosses) {
  Heap heap;
  uintptr_t* parent = heap.add(2);
  uintptr_t* left = heap.add(2);
  uintptr_t* right = heap.add(2);
  parent[0] = address(left);
  parent[1] = address(right);
  uintptr_t* a = heap.add(2);
  uintptr_t* b = heap.add(2);
  a[0] = address(b);
  b[0] = address(a);
  EXPECT_EQ(heap.mark({}), (std::vector<BlockState>{kLost, kIndirect, kIndirect, kIndirect, kIndirect}));
}

TEST(Reachability, InteriorPointersCountAndOnePastTheEndDoesNot) {
  Heap heap;
  uintptr_t* inside = heap.add(8);
  uintptr_t* beyond = heap.add(8);
  EXPECT_EQ(heap.mark({address(inside) + 40, address(beyond) + 64}), (std::vector<BlockState>{kReachable, kLost}));
}

TEST(Reachability, SmallValuesAndUnalignedWordsAreNotPointers) {
  Heap heap;
  uintptr_t* block = heap.add(2);
  alignas(8) unsigned char roots[24] = {};
  uintptr_t value = address(block);
  std::memcpy(roots + 3, &value, sizeof(value));  // unaligned: not a candidate
  std::vector<uintptr_t> words(3);
  std::memcpy(words.data(), roots, sizeof(roots));
  EXPECT_EQ(heap.mark(words), (std::vector<BlockState>{kLost}));
}

TEST(Reachability, TheAllocatorsPointerToTheNextChunkHeaderIsPassedOver) {
  Heap heap;
  // 24 bytes asked: glibc's chunk is 32, so the next chunk's header is 16 bytes past the start.
  uintptr_t* block = heap.add(3);
  uintptr_t* kept = heap.add(4);
  uintptr_t next_header = address(block) + 16;
  EXPECT_EQ(heap.mark({next_header, address(kept)}, true), (std::vector<BlockState>{kLost, kReachable}));
  EXPECT_EQ(heap.mark({next_header}, false), (std::vector<BlockState>{kReachable, kLost}));
  EXPECT_EQ(heap.mark({address(block)}, true), (std::vector<BlockState>{kReachable, kLost}));
}

TEST(Reachability, AnUnreadableBlocksContentsAreNotScanned) {
  Heap heap;
  uintptr_t* guarded = heap.add(2, 0, false);
  uintptr_t* child = heap.add(2);
  guarded[0] = address(child);
  EXPECT_EQ(heap.mark({address(guarded)}), (std::vector<BlockState>{kReachable, kLost}));
}

TEST(RadixSort, SortsByKeyStably) {
  std::vector<std::pair<uint64_t, int>> items = {{0x7f0000001230, 0}, {0x10, 1}, {0x7f0000001230, 2}, {0x5500000000, 3}};
  std::vector<std::pair<uint64_t, int>> scratch(items.size());
  std::vector<size_t> counters(kRadixCounters);
  radix_sort(items.data(), scratch.data(), items.size(), counters.data(), 48,
             [](const std::pair<uint64_t, int>& item) { return item.first; });
  EXPECT_EQ(items, (std::vector<std::pair<uint64_t, int>>{{0x10, 1}, {0x5500000000, 3}, {0x7f0000001230, 0}, {0x7f0000001230, 2}}));
}

}  // namespace
}  // namespace leakscope::internal
