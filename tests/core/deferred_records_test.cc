#include "core/deferred_records.h"

#include <gtest/gtest.h>

#include <vector>

namespace leakscope::internal {
namespace {

std::vector<DeferredRecord>& applied() {
  static std::vector<DeferredRecord> records;
  return records;
}

void apply(const DeferredRecord* records, size_t count) { applied().insert(applied().end(), records, records + count); }

int g_knocks = 0;
void knock() { ++g_knocks; }

constexpr uintptr_t kMiB = uintptr_t{1} << 20;

// One queue serves the process: each test settles what it queued and ends the ranges it added.
class DeferredRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(deferred_records_init(apply, knock));
    deferred_records_settle();
    applied().clear();
    g_knocks = 0;
  }
};

DeferredRecord alloc_at(uintptr_t pointer, uint64_t size) {
  return DeferredRecord{pointer, size, static_cast<TripleId>(3), static_cast<Epoch>(1), DeferredKind::kAlloc};
}

DeferredRecord free_at(uintptr_t pointer) {
  return DeferredRecord{pointer, 0, TripleId::kNone, static_cast<Epoch>(2), DeferredKind::kFree};
}

// covered() tells whether a block at `pointer` goes through the queue: a record of its free is
// queued, applied and forgotten.
bool covered(uintptr_t pointer) {
  deferred_records_settle();
  size_t before = applied().size();
  bool queued = deferred_records_append(free_at(pointer));
  deferred_records_settle();
  applied().resize(before);
  return queued;
}

TEST_F(DeferredRecords, QueuesOnlyBlocksInsideARangeAndAppliesThemInOrder) {
  // An arena of 1 MiB that is not MiB-aligned, as pymalloc's mmap gives them.
  uintptr_t arena = 0x7f1234540000;
  ASSERT_TRUE(deferred_records_add_range(arena, kMiB));
  EXPECT_TRUE(covered(arena));
  EXPECT_TRUE(covered(arena + kMiB - 16));
  EXPECT_FALSE(covered(arena - 16));
  EXPECT_FALSE(covered(arena + kMiB));

  EXPECT_TRUE(deferred_records_append(alloc_at(arena + 32, 24)));
  EXPECT_FALSE(deferred_records_append(alloc_at(arena + kMiB, 24)));  // recorded at once by the caller
  EXPECT_TRUE(deferred_records_append(free_at(arena + 32)));
  EXPECT_TRUE(deferred_records_append(alloc_at(arena + 32, 40)));
  EXPECT_EQ(deferred_records_pending(), 3u);
  EXPECT_TRUE(applied().empty());

  deferred_records_settle();
  EXPECT_EQ(deferred_records_pending(), 0u);
  ASSERT_EQ(applied().size(), 3u);
  EXPECT_EQ(applied()[0].kind, DeferredKind::kAlloc);
  EXPECT_EQ(applied()[0].size, 24u);
  EXPECT_EQ(applied()[1].kind, DeferredKind::kFree);
  EXPECT_EQ(applied()[2].size, 40u);
  EXPECT_EQ(g_knocks, 0);
  deferred_records_remove_range(arena, kMiB);
}

TEST_F(DeferredRecords, EndingARangeAppliesWhatIsQueuedOfItBeforeItsAddressesCanBeReused) {
  uintptr_t arena = 0x7f2000000000;
  ASSERT_TRUE(deferred_records_add_range(arena, kMiB));
  ASSERT_TRUE(deferred_records_append(alloc_at(arena + 64, 16)));
  deferred_records_remove_range(arena, kMiB);
  ASSERT_EQ(applied().size(), 1u);
  EXPECT_EQ(applied()[0].pointer, arena + 64);
  EXPECT_FALSE(covered(arena + 64));
  EXPECT_FALSE(deferred_records_append(free_at(arena + 64)));
  // A resize's end is queued whatever the range: the take it answers may have been queued before
  // the range ended inside the resize.
  EXPECT_TRUE(deferred_records_append(
      DeferredRecord{arena + 64, 0, TripleId::kNone, static_cast<Epoch>(2), DeferredKind::kTakeEnd}));
  deferred_records_settle();
  EXPECT_EQ(applied().size(), 2u);
}

TEST_F(DeferredRecords, AFullQueueIsAppliedInOrderByTheThreadAppendingAndTheWriterIsKnockedOncePerFilling) {
  uintptr_t arena = 0x7f3000000000;
  ASSERT_TRUE(deferred_records_add_range(arena, kMiB));
  constexpr size_t kRecords = 200000;  // three times the queue
  for (size_t i = 0; i < kRecords; ++i) ASSERT_TRUE(deferred_records_append(alloc_at(arena + (i % 4096) * 16, i)));
  EXPECT_LT(deferred_records_pending(), kRecords);
  deferred_records_settle();
  ASSERT_EQ(applied().size(), kRecords);
  for (size_t i = 0; i < kRecords; ++i) ASSERT_EQ(applied()[i].size, i) << "out of order at " << i;
  // Knocked as the queue passed the mark on each filling, never on every record.
  EXPECT_GE(g_knocks, 1);
  EXPECT_LE(g_knocks, 4);
  deferred_records_remove_range(arena, kMiB);
}

TEST_F(DeferredRecords, AMiBSharedByFourRangesTakesNoFifthAndEndingOneKeepsTheOthers) {
  uintptr_t full = 0x7f4000100000;  // a MiB holding four ranges of 256 KiB
  constexpr uintptr_t kQuarter = 256 * 1024;
  for (uintptr_t i = 0; i < 4; ++i) ASSERT_TRUE(deferred_records_add_range(full + i * kQuarter, kQuarter));
  // A fifth range across the MiB below and this one is refused, and leaves nothing of itself
  // in the MiB below, which took it first.
  EXPECT_FALSE(deferred_records_add_range(full - 4096, 8192));
  EXPECT_FALSE(covered(full - 16));
  deferred_records_remove_range(full + kQuarter, kQuarter);
  EXPECT_TRUE(covered(full + 16));
  EXPECT_FALSE(covered(full + kQuarter + 16));
  EXPECT_TRUE(covered(full + 3 * kQuarter + 16));
  for (uintptr_t i : {0, 2, 3}) deferred_records_remove_range(full + i * kQuarter, kQuarter);
  EXPECT_FALSE(covered(full + 16));
}

TEST_F(DeferredRecords, ManyArenasStayFindableAsTheTableGrowsAndShrinks) {
  uintptr_t base = 0x7f5000040000;
  constexpr uintptr_t kArenas = 3000;
  for (uintptr_t i = 0; i < kArenas; ++i) ASSERT_TRUE(deferred_records_add_range(base + i * kMiB, kMiB));
  for (uintptr_t i = 0; i < kArenas; i += 2) deferred_records_remove_range(base + i * kMiB, kMiB);
  for (uintptr_t i = 0; i < kArenas; ++i) {
    ASSERT_EQ(covered(base + i * kMiB + 512), i % 2 == 1) << i;
  }
  for (uintptr_t i = 1; i < kArenas; i += 2) deferred_records_remove_range(base + i * kMiB, kMiB);
  EXPECT_FALSE(covered(base + kMiB + 512));
}

TEST_F(DeferredRecords, PendingRecordsAreVisitedInOrderWithoutBeingApplied) {
  uintptr_t arena = 0x7f6000000000;
  ASSERT_TRUE(deferred_records_add_range(arena, kMiB));
  ASSERT_TRUE(deferred_records_append(alloc_at(arena + 16, 8)));
  ASSERT_TRUE(deferred_records_append(free_at(arena + 48)));
  ASSERT_TRUE(deferred_records_append(
      DeferredRecord{arena + 80, 0, TripleId::kNone, static_cast<Epoch>(2), DeferredKind::kTake}));
  std::vector<DeferredRecord> pending;
  auto keep = [](const DeferredRecord& record, void* context) {
    static_cast<std::vector<DeferredRecord>*>(context)->push_back(record);
  };
  deferred_records_visit_pending(keep, &pending);
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].kind, DeferredKind::kAlloc);
  EXPECT_EQ(pending[1].pointer, arena + 48);
  EXPECT_EQ(pending[2].kind, DeferredKind::kTake);
  EXPECT_TRUE(applied().empty());
  deferred_records_remove_range(arena, kMiB);
  pending.clear();
  deferred_records_visit_pending(keep, &pending);
  EXPECT_TRUE(pending.empty());
}

// While the program has one thread every record is queued, wherever its block lies, from the
// allocation that begins it (the queue exists here: at once); a second thread applies what is
// queued before it records anything, and from then on only blocks in ranges are queued.
TEST_F(DeferredRecords, WhileAloneEveryRecordIsQueuedUntilASecondThreadAppliesThem) {
  uintptr_t outside = 0x7f3000000000;
  EXPECT_FALSE(deferred_records_append(free_at(outside))) << "no range, not alone";
  deferred_records_queue_all(apply, knock);
  EXPECT_FALSE(deferred_records_alone()) << "begun by an allocation";
  EXPECT_TRUE(deferred_records_append_alone(alloc_at(outside, 24)));
  EXPECT_TRUE(deferred_records_alone());
  EXPECT_TRUE(deferred_records_append(free_at(outside)));
  EXPECT_TRUE(deferred_records_append_alone(alloc_at(outside, 48)));
  EXPECT_EQ(deferred_records_pending(), 3u);
  EXPECT_TRUE(applied().empty());

  deferred_records_end_alone();
  EXPECT_FALSE(deferred_records_alone());
  EXPECT_EQ(deferred_records_pending(), 0u);
  ASSERT_EQ(applied().size(), 3u);
  EXPECT_EQ(applied()[0].size, 24u);
  EXPECT_EQ(applied()[1].kind, DeferredKind::kFree);
  EXPECT_EQ(applied()[2].size, 48u);
  EXPECT_FALSE(deferred_records_append_alone(alloc_at(outside, 24)));
  EXPECT_FALSE(deferred_records_append(free_at(outside)));
  deferred_records_end_alone();  // a third thread: nothing more to do
  EXPECT_EQ(applied().size(), 3u);
}

// A queue found full while every record is queued is applied by the thread that found it, which
// goes on queuing; found full again soon after, the writer does not keep up, and records are made
// at once from then on.
TEST_F(DeferredRecords, WhileAloneAQueueFullTwiceInARowEndsTheQueuing) {
  uintptr_t outside = 0x7f3100000000;
  deferred_records_queue_all(apply, knock);
  ASSERT_TRUE(deferred_records_append_alone(alloc_at(outside, 16)));
  constexpr size_t kCapacity = size_t{1} << 16;
  size_t appended = 1;
  for (; appended < kCapacity; ++appended) ASSERT_TRUE(deferred_records_append(free_at(outside))) << appended;
  EXPECT_EQ(deferred_records_pending(), kCapacity);
  EXPECT_TRUE(deferred_records_append(free_at(outside))) << "found full once: applied, and queued";
  ++appended;
  EXPECT_TRUE(deferred_records_alone());
  EXPECT_EQ(applied().size(), kCapacity);
  EXPECT_EQ(deferred_records_pending(), 1u);
  // Full again at once (a fill takes a millisecond or two; a machine that stops this thread for
  // 100 ms between two makes it try again).
  size_t fills = 1;
  bool queued = true;
  while (queued && fills < 8) {
    while (deferred_records_pending() < kCapacity) ASSERT_TRUE(deferred_records_append(free_at(outside)));
    appended += kCapacity - 1;
    queued = deferred_records_append(free_at(outside));
    appended += queued;
    ++fills;
  }
  EXPECT_FALSE(queued) << "recorded by the caller";
  EXPECT_FALSE(deferred_records_alone());
  EXPECT_EQ(applied().size(), appended);
  EXPECT_EQ(deferred_records_pending(), 0u);
}

}  // namespace
}  // namespace leakscope::internal
