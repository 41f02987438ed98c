#include "core/interval_map.h"

#include <gtest/gtest.h>

#include <vector>

namespace leakscope::internal {
namespace {

std::vector<IntervalCut> extract(uintptr_t begin, uintptr_t end) {
  std::vector<IntervalCut> cuts;
  interval_map_extract(begin, end, [](const IntervalCut& cut, void* out) {
    static_cast<std::vector<IntervalCut>*>(out)->push_back(cut);
  }, &cuts);
  return cuts;
}

std::vector<Interval> all_intervals() {
  std::vector<Interval> out;
  interval_map_visit([](const Interval* items, uint32_t count, void* context) {
    static_cast<std::vector<Interval>*>(context)->assign(items, items + count);
  }, &out);
  return out;
}

Interval make(uintptr_t begin, uintptr_t end, uint32_t triple) {
  return Interval{begin, end, static_cast<TripleId>(triple), static_cast<Epoch>(5)};
}

TEST(IntervalMap, HoleInTheMiddleSplitsOneBlockIntoTwo) {
  ASSERT_TRUE(interval_map_insert(make(0x10000, 0x1a000, 1)));
  std::vector<IntervalCut> cuts = extract(0x14000, 0x16000);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_TRUE(cuts[0].split);
  EXPECT_FALSE(cuts[0].whole_block);
  EXPECT_EQ(cuts[0].removed.end - cuts[0].removed.begin, 0x2000u);
  std::vector<Interval> left = all_intervals();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].begin, 0x10000u);
  EXPECT_EQ(left[0].end, 0x14000u);
  EXPECT_EQ(left[1].begin, 0x16000u);
  EXPECT_EQ(left[1].end, 0x1a000u);
  extract(0, ~uintptr_t{0});
}

TEST(IntervalMap, TrimmingAnEdgeKeepsOneShorterBlock) {
  ASSERT_TRUE(interval_map_insert(make(0x20000, 0x26000, 2)));
  std::vector<IntervalCut> cuts = extract(0x24000, 0x30000);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_FALSE(cuts[0].split);
  EXPECT_FALSE(cuts[0].whole_block);
  cuts = extract(0x1f000, 0x21000);
  ASSERT_EQ(cuts.size(), 1u);
  std::vector<Interval> left = all_intervals();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].begin, 0x21000u);
  EXPECT_EQ(left[0].end, 0x24000u);
  extract(0, ~uintptr_t{0});
}

TEST(IntervalMap, OneUnmapMayCoverSeveralMappings) {
  for (uintptr_t i = 0; i < 5; ++i) ASSERT_TRUE(interval_map_insert(make(0x100000 + i * 0x10000, 0x108000 + i * 0x10000, 3)));
  std::vector<IntervalCut> cuts = extract(0x104000, 0x134000);
  ASSERT_EQ(cuts.size(), 4u);
  EXPECT_FALSE(cuts[0].whole_block);  // trimmed on its right
  EXPECT_TRUE(cuts[1].whole_block);
  EXPECT_TRUE(cuts[2].whole_block);
  EXPECT_FALSE(cuts[3].whole_block);  // trimmed on its left
  EXPECT_EQ(all_intervals().size(), 3u);
  EXPECT_EQ(extract(0, ~uintptr_t{0}).size(), 3u);
  EXPECT_TRUE(all_intervals().empty());
}

}  // namespace
}  // namespace leakscope::internal
