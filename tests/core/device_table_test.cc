#include "core/device_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace leakscope::internal {
namespace {

DeviceBlock block(DeviceKey kind, uint64_t key, uint64_t size, uint64_t context = 0) {
  return DeviceBlock{key, size, kind == DeviceKey::kDriverHandle ? 0 : key, context, static_cast<TripleId>(7),
                     static_cast<Epoch>(3), kind, Domain::kCuda, 0, false};
}

std::vector<DeviceBlock> all_blocks() {
  std::vector<DeviceBlock> out;
  device_table_visit([](const DeviceBlock* blocks, uint32_t count, void* context) {
    auto* into = static_cast<std::vector<DeviceBlock>*>(context);
    into->insert(into->end(), blocks, blocks + count);
  }, &out);
  return out;
}

void forget_all() {
  device_table_remove_all([](const DeviceBlock&, void*) {}, nullptr);
}

TEST(DeviceTable, KindsAreKeySpacesOfTheirOwnSoASegmentAndItsFirstBlockCoexist) {
  forget_all();
  DeviceBlock replaced;
  EXPECT_FALSE(device_table_insert(block(DeviceKey::kDriverAddress, 0x7f0000000000, 20 << 20), &replaced));
  EXPECT_FALSE(device_table_insert(block(DeviceKey::kLayeredAddress, 0x7f0000000000, 1 << 20), &replaced));
  EXPECT_FALSE(device_table_insert(block(DeviceKey::kDriverHandle, 0x7f0000000000, 2 << 20), &replaced));
  EXPECT_EQ(all_blocks().size(), 3u);
  DeviceBlock removed;
  ASSERT_TRUE(device_table_remove(DeviceKey::kLayeredAddress, 0x7f0000000000, &removed));
  EXPECT_EQ(removed.size, 1u << 20);
  EXPECT_FALSE(device_table_remove(DeviceKey::kLayeredAddress, 0x7f0000000000, &removed));
  EXPECT_EQ(all_blocks().size(), 2u);
  // An address handed out again before its free was seen gives back the stale block.
  EXPECT_TRUE(device_table_insert(block(DeviceKey::kDriverAddress, 0x7f0000000000, 4 << 20), &replaced));
  EXPECT_EQ(replaced.size, 20u << 20);
  forget_all();
}

TEST(DeviceTable, DestroyingAContextRemovesEveryBlockOfItAndNoOther) {
  forget_all();
  DeviceBlock replaced;
  // Enough blocks that removals shift probe runs around the end of the array.
  for (uint64_t i = 0; i < 5000; ++i) {
    ASSERT_FALSE(device_table_insert(block(DeviceKey::kDriverAddress, 0x100000 + i * 512, 512, i % 3 == 0 ? 11 : 22), &replaced));
  }
  std::vector<uint64_t> removed;
  int count = device_table_remove_context(11, [](const DeviceBlock& gone, void* into) {
    static_cast<std::vector<uint64_t>*>(into)->push_back(gone.context);
  }, &removed);
  EXPECT_EQ(count, 1667);
  EXPECT_TRUE(std::all_of(removed.begin(), removed.end(), [](uint64_t context) { return context == 11; }));
  std::vector<DeviceBlock> left = all_blocks();
  EXPECT_EQ(left.size(), 5000u - 1667u);
  EXPECT_TRUE(std::all_of(left.begin(), left.end(), [](const DeviceBlock& b) { return b.context == 22; }));
  DeviceBlock gone;
  for (uint64_t i = 1; i < 5000; i += 3) EXPECT_TRUE(device_table_remove(DeviceKey::kDriverAddress, 0x100000 + i * 512, &gone));
  EXPECT_EQ(device_table_remove_context(0, [](const DeviceBlock&, void*) {}, nullptr), 0) << "0 is no context";
  forget_all();
}

TEST(DeviceTable, AHandleIsSeenWhereItIsMappedAndReleasedWhileMappedEndsWhenUnmapped) {
  forget_all();
  DeviceBlock replaced, removed;
  auto count = [](const DeviceBlock&, void* ended) { ++*static_cast<int*>(ended); };
  ASSERT_FALSE(device_table_insert(block(DeviceKey::kDriverHandle, 42, 2 << 20), &replaced));
  EXPECT_EQ(all_blocks().at(0).begin, 0u);
  device_table_map(42, 0x7e0000000000);
  device_table_map(42, 0x7e0000800000);  // a second mapping: the first is where its bytes are looked up
  EXPECT_EQ(all_blocks().at(0).begin, 0x7e0000000000u);
  int ended = 0;
  device_table_unmap(0x7e0000000000, 2 << 20, count, &ended);
  EXPECT_EQ(ended, 0);
  EXPECT_EQ(all_blocks().at(0).begin, 0u);
  EXPECT_TRUE(device_table_release(42, &removed)) << "not mapped: released at once";
  EXPECT_TRUE(all_blocks().empty());

  // Released while mapped, as VMM users do right after mapping: the memory stays until unmapped.
  ASSERT_FALSE(device_table_insert(block(DeviceKey::kDriverHandle, 43, 2 << 20), &replaced));
  device_table_map(43, 0x7e0001000000);
  EXPECT_FALSE(device_table_release(43, &removed));
  EXPECT_EQ(all_blocks().size(), 1u);
  device_table_unmap(0x7e0001000000, 2 << 20, count, &ended);
  EXPECT_EQ(ended, 1);
  EXPECT_TRUE(all_blocks().empty());
  forget_all();
}

TEST(DeviceTable, AContextsVmmHandlesAndReservationsOutliveIt) {
  forget_all();
  DeviceBlock replaced;
  ASSERT_FALSE(device_table_insert(block(DeviceKey::kDriverAddress, 0x1000, 512, 5), &replaced));
  ASSERT_FALSE(device_table_insert(block(DeviceKey::kDriverHandle, 7, 4096, 5), &replaced));
  ASSERT_FALSE(device_table_insert(block(DeviceKey::kReservedRange, 0x20000, 8192, 5), &replaced));
  EXPECT_EQ(device_table_remove_context(5, [](const DeviceBlock&, void*) {}, nullptr), 1);
  EXPECT_EQ(all_blocks().size(), 2u);
  forget_all();
}

}  // namespace
}  // namespace leakscope::internal
