// Where a run is judged: the teardown mark, or the start of a shutdown that freed up to it.
#include "report/snapshot_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace leakscope::report {
namespace {

using internal::SnapshotReason;

// run() is a stream's snapshots, 100 ms apart, holding `blocks` tracked heap blocks each, none
// parked, with the reasons given (periodic where none is), and a teardown mark after them holding
// `at_mark`.
std::vector<SnapshotMark> run(const std::vector<uint64_t>& blocks, uint64_t at_mark,
                              const std::vector<SnapshotReason>& reasons = {}) {
  std::vector<SnapshotMark> marks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    SnapshotReason reason = i < reasons.size() ? reasons[i] : SnapshotReason::kPeriodic;
    marks.push_back(SnapshotMark{reason, 0, false, (i + 1) * 100'000'000ull, blocks[i], 0, 0});
  }
  marks.push_back(SnapshotMark{SnapshotReason::kTeardown, 0, false, (blocks.size() + 1) * 100'000'000ull, at_mark, 0, 0});
  marks.push_back(SnapshotMark{SnapshotReason::kExit, 0, true, (blocks.size() + 2) * 100'000'000ull, 1000, 0, 0});
  return marks;
}

// A script's 2.5 s: its interpreter's 20 000 blocks, 32 more a snapshot (the records it logs).
std::vector<uint64_t> steady_logging(size_t snapshots) {
  std::vector<uint64_t> blocks;
  for (size_t i = 0; i < snapshots; ++i) blocks.push_back(20'000 + 32 * i);
  return blocks;
}

uint32_t shutdown_of(const std::vector<SnapshotMark>& marks) {
  return choose_snapshot(SnapshotChoice{}, marks, "run.lsc").shutdown;
}

TEST(ShutdownChoice, AFallIntoTheMarkIsAShutdownFromWhereItBegan) {
  EXPECT_EQ(shutdown_of(run({100'000, 120'000, 150'000, 140'000, 130'000}, 110'000)), 3u);
  std::vector<uint64_t> longer(20, 100'000);
  longer.push_back(150'000);
  ChosenSnapshot chosen = choose_snapshot(SnapshotChoice{}, run(longer, 110'000), "run.lsc");
  EXPECT_EQ(chosen.shutdown, 21u);
  EXPECT_EQ(chosen.midway, 10u) << "the snapshot nearest half the shutdown's time (1.05 s)";
  EXPECT_EQ(shutdown_of(run({100'000, 120'000, 150'000, 150'000}, 150'000)), 0u) << "nothing fell";
  EXPECT_EQ(shutdown_of(run({100'000, 120'000, 150'000}, 149'900)), 0u) << "too little fell to be a shutdown";
}

// A high-water snapshot is taken at the top of a burst: the burst's own free before main returns
// is no shutdown, unless periodic snapshots saw the fall too; a shutdown found among them keeps its
// snapshot's index in the stream.
TEST(ShutdownChoice, ABurstSeenOnlyByAHighWaterSnapshotIsNoShutdown) {
  EXPECT_EQ(shutdown_of(run({1'000, 1'000, 400'000, 1'000}, 1'000,
                            {SnapshotReason::kPeriodic, SnapshotReason::kPeriodic, SnapshotReason::kHighWater})),
            0u);
  EXPECT_EQ(shutdown_of(run({100'000, 150'000, 400'000, 140'000, 130'000}, 110'000,
                            {SnapshotReason::kPeriodic, SnapshotReason::kPeriodic, SnapshotReason::kHighWater})),
            2u)
      << "the periodic fall, with the high-water snapshot in it passed over";
}

// An atexit handler cleared 3 000 records, a periodic snapshot fell in before the interpreter
// finalized, and the mark holds a few blocks more than it: the shutdown began before the clear.
// Before, the strict fall stopped at the mark and the run was judged with the records gone.
TEST(ShutdownChoice, APeriodicSnapshotBetweenTheFallAndTheMarkIsPassedOver) {
  EXPECT_EQ(shutdown_of(run({100'000, 110'000, 113'000, 110'000}, 110'040)), 3u);
  EXPECT_EQ(shutdown_of(run({100'000, 120'000, 118'000, 118'100, 110'000}, 105'000)), 2u) << "an uptick while draining";
}

// What a test's fixture freed before the harness's own snapshot after its last test, and what a
// program freed and then ran on for a while, are not a shutdown.
TEST(ShutdownChoice, AFallBeforeAnAskedForSnapshotOrALongFlatStretchIsNot) {
  EXPECT_EQ(shutdown_of(run({100'000, 110'000, 90'000}, 90'010,
                            {SnapshotReason::kPeriodic, SnapshotReason::kPeriodic, SnapshotReason::kOnDemand})),
            0u);
  EXPECT_EQ(shutdown_of(run({100'000, 110'000, 90'000, 90'000, 90'010}, 90'010)), 0u);
  EXPECT_EQ(shutdown_of(run({100'000, 110'000, 90'000}, 100'000)), 0u) << "more than a pause's few blocks";
}

// A small program's shutdown: it frees far less than an eighth of its blocks, yet far more than
// it ever moved from one snapshot to the next.
TEST(ShutdownChoice, AFallThatStandsOutOfTheRunsStepsIsAShutdown) {
  std::vector<uint64_t> blocks = steady_logging(25);
  EXPECT_EQ(shutdown_of(run(blocks, blocks.back() - 800)), 25u);
  EXPECT_EQ(shutdown_of(run(blocks, blocks.back() - 60)), 0u) << "a few dozen blocks: no shutdown";
  std::vector<uint64_t> churning;
  for (size_t i = 0; i < 25; ++i) churning.push_back(i % 2 == 0 ? 20'000 : 20'300);
  EXPECT_EQ(shutdown_of(run(churning, 19'500)), 0u) << "no more than the run's own churn";
}

// The records a Python script logged and cleared as it ended go to its interpreter's free lists:
// they stay tracked, parked, and the program's blocks are the tracked less the parked.
TEST(ShutdownChoice, BlocksParkedOnFreeListsAreNotTheProgramsOwn) {
  std::vector<uint64_t> blocks = steady_logging(25);
  std::vector<SnapshotMark> marks = run(blocks, blocks.back() + 5);
  marks[25].parked_blocks = 800;
  EXPECT_EQ(shutdown_of(marks), 25u);
  marks[25].parked_blocks = 0;
  EXPECT_EQ(shutdown_of(marks), 0u);
}

// A vector grown in one buffer and released as main ends frees one block: the fall is told by
// the heap bytes, in exact mode only.
TEST(ShutdownChoice, OneLargeBlockFreedIsAShutdownToldByItsBytes) {
  std::vector<uint64_t> blocks = steady_logging(25);
  std::vector<SnapshotMark> marks = run(blocks, blocks.back() + 3);
  for (size_t i = 0; i < 25; ++i) marks[i].host_heap_bytes = 300'000 + (uint64_t{1} << (12 + i / 3));
  marks[25].host_heap_bytes = 300'000;
  EXPECT_EQ(shutdown_of(marks), 25u);
  EXPECT_EQ(choose_snapshot(SnapshotChoice{}, marks, "run.lsc", 512 * 1024).shutdown, 0u) << "sampled";
  marks[25].host_heap_bytes = marks[24].host_heap_bytes - 8'000;
  EXPECT_EQ(shutdown_of(marks), 0u) << "less than the least fall";
}

// In sampled mode the table holds a few dozen recorded blocks, whose count wanders by its square
// root: a fall of 11 from 60 is that, not a shutdown; a fall of 200 from 400 is one.
TEST(ShutdownChoice, ASampledRunsFallMustStandOutOfItsNoise) {
  constexpr uint64_t kSampled = 512 * 1024;
  std::vector<SnapshotMark> wander = run({50, 56, 60, 56}, 49);
  EXPECT_EQ(shutdown_of(wander), 3u) << "exact mode: a small program's shutdown";
  EXPECT_EQ(choose_snapshot(SnapshotChoice{}, wander, "run.lsc", kSampled).shutdown, 0u);
  EXPECT_EQ(choose_snapshot(SnapshotChoice{}, run({380, 400, 300}, 200), "run.lsc", kSampled).shutdown, 2u);
}

// A sampled run that frees everything at once: the shutdown is that fall, not the noise before it
// (a C++ service freeing at 20.0 s was judged from 17.6 s, each site at its largest since).
TEST(ShutdownChoice, ASampledShutdownBeginsAtItsFallNotAtTheNoiseBeforeIt) {
  std::vector<SnapshotMark> marks = run({380, 400, 390, 410, 405}, 20);
  EXPECT_EQ(choose_snapshot(SnapshotChoice{}, marks, "run.lsc", 512 * 1024).shutdown, 5u);
  EXPECT_EQ(shutdown_of(marks), 4u) << "exact mode: a drain through a pause, from its largest";
}

}  // namespace
}  // namespace leakscope::report
