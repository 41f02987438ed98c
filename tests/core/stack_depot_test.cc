#include "core/stack_depot.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "core/task_registry.h"
#include "core/triple_registry.h"

namespace leakscope::internal {
namespace {

class Registries : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(depot_init());
    ASSERT_TRUE(triple_registry_init());
    ASSERT_TRUE(task_registry_init());
  }
};

TEST_F(Registries, SameFramesGiveTheSameStackId) {
  uintptr_t a[] = {1, 2, 3}, b[] = {1, 2, 3}, c[] = {1, 2, 4};
  StackId first = depot_intern(a, 3);
  EXPECT_NE(first, StackId::kNone);
  EXPECT_EQ(depot_intern(b, 3), first);
  EXPECT_NE(depot_intern(c, 3), first);
  EXPECT_NE(depot_intern(a, 2), first);
  const StackEntry* entry = depot_get(first);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->depth, 3u);
  EXPECT_EQ(entry->frame(2), 3u);
  EXPECT_EQ(depot_intern(a, 0), StackId::kNone);
}

TEST_F(Registries, DeepStacksKeepEveryFrameAndShareTheirTail) {
  uintptr_t one[40], two[40];
  for (uintptr_t i = 0; i < 40; ++i) one[i] = two[i] = 0x5000 + i;
  two[3] = 0x9999;  // differs in the head only
  StackId first = depot_intern(one, 40), second = depot_intern(two, 40);
  ASSERT_NE(first, StackId::kNone);
  ASSERT_NE(second, first);
  const StackEntry* a = depot_get(first);
  const StackEntry* b = depot_get(second);
  for (uint32_t i = 0; i < 40; ++i) {
    EXPECT_EQ(a->frame(i), one[i]);
    EXPECT_EQ(b->frame(i), two[i]);
  }
  EXPECT_EQ(a->tail, b->tail);
  two[3] = one[3];
  two[30] = 0x7777;  // differs in the tail only
  StackId third = depot_intern(two, 40);
  EXPECT_NE(third, first);
  EXPECT_NE(depot_get(third)->tail, a->tail);
  two[30] = one[30];
  EXPECT_EQ(depot_intern(two, 40), first);
  EXPECT_NE(depot_intern(one, 9), depot_intern(one, 8));
}

TEST_F(Registries, ConcurrentInterningAgreesOnEveryId) {
  constexpr int kThreads = 8, kStacks = 3000;
  std::vector<std::vector<StackId>> seen(kThreads, std::vector<StackId>(kStacks));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &seen] {
      for (int i = 0; i < kStacks; ++i) {
        int s = (i * 7 + t * 13) % kStacks;
        uintptr_t frames[] = {0xabc000u + static_cast<uintptr_t>(s), 0xdef, static_cast<uintptr_t>(s) * 3};
        seen[t][s] = depot_intern(frames, 3);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint32_t> distinct;
  for (int s = 0; s < kStacks; ++s) {
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(seen[t][s], seen[0][s]);
    distinct.insert(raw(seen[0][s]));
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kStacks));
  for (uint32_t id : distinct) EXPECT_LT(id, depot_end_id());
}

TEST_F(Registries, TriplesShareTheirSiteAcrossThreadsAndTasks) {
  uintptr_t frames[] = {11, 22};
  StackId stack = depot_intern(frames, 2);
  TripleEntry* one = triple_intern(Domain::kHeap, static_cast<ThreadSlot>(1), TaskId::kNone, stack);
  TripleEntry* two = triple_intern(Domain::kHeap, static_cast<ThreadSlot>(2), TaskId::kNone, stack);
  TripleEntry* again = triple_intern(Domain::kHeap, static_cast<ThreadSlot>(1), TaskId::kNone, stack);
  TripleEntry* mapped = triple_intern(Domain::kMmap, static_cast<ThreadSlot>(1), TaskId::kNone, stack);
  EXPECT_EQ(one, again);
  EXPECT_NE(one, two);
  EXPECT_EQ(one->site, two->site);
  EXPECT_NE(one->site, mapped->site);
}

TEST_F(Registries, TaskIdsPerNameAreCapped) {
  TaskId first = task_intern("capped", 1);
  EXPECT_EQ(task_intern("capped", 1), first);
  for (uint64_t id = 2; id <= kMaxIdsPerTaskName + 10; ++id) task_intern("capped", id);
  TaskId overflow = task_intern("capped", 100000);
  const TaskEntry* entry = task_get(overflow);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->user_id, 0u);
  EXPECT_STREQ(entry->name, "capped");
  EXPECT_EQ(task_intern("", 1), TaskId::kNone);
  EXPECT_EQ(task_intern(nullptr, 1), TaskId::kNone);
}

TEST(LifetimeBuckets, AreLog2OfWholeEpochs) {
  EXPECT_EQ(lifetime_bucket(0), 0);
  EXPECT_EQ(lifetime_bucket(1), 1);
  EXPECT_EQ(lifetime_bucket(2), 2);
  EXPECT_EQ(lifetime_bucket(3), 2);
  EXPECT_EQ(lifetime_bucket(4), 3);
  EXPECT_EQ(lifetime_bucket(1u << 30), kLifetimeBuckets - 1);
}

}  // namespace
}  // namespace leakscope::internal
