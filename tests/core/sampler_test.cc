#include "core/sampler.h"

#include <gtest/gtest.h>

#include <cmath>

namespace leakscope::internal {
namespace {

class Sampler : public ::testing::Test {
 protected:
  void TearDown() override { sampler_set_interval(0); }
};

TEST_F(Sampler, NumericsMatchTheMathLibrary) {
  for (double x : {0.0, 1e-9, 1e-4, 0.01, 0.5, 1.0, 3.0, 17.0, 400.0}) {
    EXPECT_NEAR(sampler_exp_negative(x), std::exp(-x), 1e-12 + 1e-9 * std::exp(-x)) << x;
  }
  for (double x : {1e-300, 1e-9, 0.001, 0.3, 0.5, 0.999999, 1.0, 7.5, 1e6}) {
    EXPECT_NEAR(sampler_log(x), std::log(x), 1e-9 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
}

TEST_F(Sampler, ExactModeWeighsEveryBlockAsItself) {
  SampleWeight weight = sample_weight(1000, 0x7f0000001000);
  EXPECT_EQ(weight.bytes, 1000u);
  EXPECT_EQ(weight.blocks, 1u);
}

TEST_F(Sampler, WeightsAreTheInverseOfTheRecordingProbability) {
  sampler_set_interval(512 * 1024);
  SampleWeight small = sample_weight(64, 0x7f0000001000);
  EXPECT_NEAR(static_cast<double>(small.blocks), 512.0 * 1024 / 64, 1.0);
  EXPECT_NEAR(static_cast<double>(small.bytes), 512.0 * 1024, 64.0);
  SampleWeight large = sample_weight(64ull << 20, 0x7f0000001000);
  EXPECT_EQ(large.blocks, 1u);
  EXPECT_EQ(large.bytes, 64ull << 20);
}

// A block of about R stands for 1/p = 1.58 blocks, of 0.7 R for 1.99: over blocks at many
// addresses the counts average to that, where rounding each to the nearest whole count made a
// leak of 1 000 blocks of 80 KiB at R = 64 KiB read as 720 blocks. Alloc and free agree.
TEST_F(Sampler, BlockCountsOfBlocksNearTheIntervalAreUnbiased) {
  const uint64_t interval = 64 * 1024;
  sampler_set_interval(interval);
  for (uint64_t size : {interval, interval * 7 / 10, interval * 5 / 4, interval / 3}) {
    double inverse = 1 / (1 - std::exp(-static_cast<double>(size) / interval));
    uint64_t counted = 0;
    const int blocks = 100000;
    for (int i = 0; i < blocks; ++i) {
      uintptr_t address = 0x7f3a00000000 + static_cast<uintptr_t>(i) * (size + 16);
      SampleWeight weight = sample_weight(size, address);
      EXPECT_EQ(weight.blocks, sample_weight(size, address).blocks);
      EXPECT_GE(static_cast<double>(weight.blocks), std::floor(inverse));
      EXPECT_LE(static_cast<double>(weight.blocks), std::ceil(inverse));
      counted += weight.blocks;
    }
    EXPECT_NEAR(static_cast<double>(counted) / blocks, inverse, 0.01 * inverse) << size;
  }
}

// Over many allocations of mixed sizes, the weighted sum of what is recorded estimates the true
// total without bias: within a few standard errors.
TEST_F(Sampler, EstimatesAreUnbiased) {
  const uint64_t interval = 64 * 1024;
  sampler_set_interval(interval);
  ThreadState thread{};
  thread.tid = 1234;
  for (uint64_t size : {16ull, 1000ull, 40000ull, 300000ull}) {
    uint64_t true_bytes = 0, estimated_bytes = 0, recorded = 0;
    for (int i = 0; i < 200000; ++i) {
      true_bytes += size;
      if (sampler_take(&thread, size)) {
        estimated_bytes += sample_weight(size, 0x7f0000001000 + 16 * i).bytes;
        ++recorded;
      }
    }
    double expected_records = 200000.0 * (1 - std::exp(-static_cast<double>(size) / interval));
    double error = 1 / std::sqrt(std::max(expected_records, 1.0));
    EXPECT_NEAR(static_cast<double>(estimated_bytes) / true_bytes, 1.0, 4 * error + 0.002) << size;
    EXPECT_NEAR(static_cast<double>(recorded), expected_records, 4 * std::sqrt(expected_records) + 1) << size;
  }
}

TEST_F(Sampler, FilterForgetsWhatWasRemoved) {
  uintptr_t block = 0x7f0012345670;
  EXPECT_FALSE(sampler_filter_may_contain(block));
  sampler_filter_add(block);
  sampler_filter_add(block);
  EXPECT_TRUE(sampler_filter_may_contain(block));
  sampler_filter_remove(block);
  EXPECT_TRUE(sampler_filter_may_contain(block));
  sampler_filter_remove(block);
  EXPECT_FALSE(sampler_filter_may_contain(block));
}

TEST_F(Sampler, SaturatedFilterSlotNeverForgets) {
  uintptr_t block = 0x7f00abcdef10;
  for (int i = 0; i < 300; ++i) sampler_filter_add(block);
  for (int i = 0; i < 300; ++i) sampler_filter_remove(block);
  EXPECT_TRUE(sampler_filter_may_contain(block)) << "a saturated count no longer knows how many it holds";
}

}  // namespace
}  // namespace leakscope::internal
