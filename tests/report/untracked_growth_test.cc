#include <gtest/gtest.h>

#include "report/analysis.h"

namespace leakscope::report {
namespace {

constexpr double kMiB = 1 << 20;

// samples() is 30 snapshots a second apart: anonymous memory and tracked heap bytes moving at the
// given rates (bytes per minute), with a little wobble on the tracked side.
std::vector<ProcessSample> samples(double anon_per_min, double tracked_per_min) {
  std::vector<ProcessSample> series;
  for (int i = 0; i < 30; ++i) {
    ProcessSample sample;
    sample.time_s = i;
    sample.anon_bytes = static_cast<uint64_t>(200 * kMiB + anon_per_min * i / 60);
    sample.rss_bytes = sample.anon_bytes + static_cast<uint64_t>(50 * kMiB);
    sample.tracked_bytes[static_cast<size_t>(Domain::kHeap)] =
        static_cast<int64_t>(100 * kMiB + tracked_per_min * i / 60 + (i % 2) * 4096);
    series.push_back(sample);
  }
  return series;
}

TEST(UntrackedGrowth, GrowthNoAllocationExplainsIsAFinding) {
  std::vector<ResidencyFinding> findings = untracked_growth(samples(10 * kMiB, 0));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NEAR(findings[0].untracked_growth_bytes_per_min, 10 * kMiB, 0.01 * kMiB);
}

// 6 MiB/min over 29 s is 2.9 MiB: the pages a short run touches for the first time and a step or
// two of the allocator's heap, not a finding.
TEST(UntrackedGrowth, GrowthOfAFewMiBInAShortRunIsNotAFinding) {
  EXPECT_TRUE(untracked_growth(samples(600 * 1024, 0)).empty());
  EXPECT_TRUE(untracked_growth(samples(6 * kMiB, 0)).empty());
  EXPECT_EQ(untracked_growth(samples(9 * kMiB, 0)).size(), 1u);  // 4.35 MiB in the same span
}

// A 20 MiB batch buffer freed and kept by the allocator (glibc serves the next from its heap): RSS
// rose once, at 10 s, and stayed. A level, not growth, however steep a trend over the run reads it.
TEST(UntrackedGrowth, MemoryThatRoseOnceAndStayedIsNotAFinding) {
  std::vector<ProcessSample> series = samples(0, 0);
  for (ProcessSample& sample : series) {
    if (sample.time_s >= 10) sample.anon_bytes += static_cast<uint64_t>(20 * kMiB);
  }
  EXPECT_TRUE(untracked_growth(series).empty());
  // Twice, at 10 and 20 s: still no pace to go by.
  for (ProcessSample& sample : series) {
    if (sample.time_s >= 20) sample.anon_bytes += static_cast<uint64_t>(20 * kMiB);
  }
  EXPECT_TRUE(untracked_growth(series).empty());
}

TEST(UntrackedGrowth, GrowthOfTrackedAllocationsIsNotAFinding) {
  EXPECT_TRUE(untracked_growth(samples(10 * kMiB, 9 * kMiB)).empty());
}

// Warm-up memory freed while the allocator keeps the pages: RSS barely moves, tracked bytes fall.
TEST(UntrackedGrowth, ShrinkingTrackedBytesUnderFlatMemoryIsNotAFinding) {
  EXPECT_TRUE(untracked_growth(samples(170 * 1024, -2 * kMiB)).empty());
}

TEST(UntrackedGrowth, ShrinkingTrackedBytesDoNotInflateTheUnexplainedGrowth) {
  std::vector<ResidencyFinding> findings = untracked_growth(samples(10 * kMiB, -2 * kMiB));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NEAR(findings[0].untracked_growth_bytes_per_min, 10 * kMiB, 0.01 * kMiB);
}

}  // namespace
}  // namespace leakscope::report
