// Verdicts on synthetic sites: a simulator runs one site's allocations and frees epoch by epoch
// (1 s each) and yields what the stream would: live bytes per snapshot and live bytes by birth.
#include "report/verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <functional>
#include <random>

namespace leakscope::report {
namespace {

struct Block {
  int birth_epoch;
  int64_t bytes;
};

class SiteSimulator {
 public:
  // step(epoch, live) may add blocks to and remove blocks from `live` for that epoch.
  SiteEvidence run(int epochs, const std::function<void(int, std::deque<Block>&)>& step) {
    SiteEvidence evidence;
    std::deque<Block> live;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      step(epoch, live);
      int64_t total = 0;
      for (const Block& block : live) total += block.bytes;
      evidence.live_bytes.push_back({static_cast<double>(epoch + 1), static_cast<double>(total)});
    }
    for (const Block& block : live) evidence.births.push_back({static_cast<double>(block.birth_epoch), block.bytes});
    evidence.now_s = epochs;
    evidence.epochs = static_cast<uint32_t>(epochs);
    return evidence;
  }
};

SiteJudgement judge(int epochs, const std::function<void(int, std::deque<Block>&)>& step) {
  return judge_site(SiteSimulator().run(epochs, step));
}

TEST(Verdict, SteadyLeakIsALeak) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) { live.push_back({e, 1000}); });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
  EXPECT_GT(j.leak_entropy, 0.95);
  EXPECT_NEAR(j.growth_bytes_per_min, 60000, 1);
  EXPECT_GT(j.confidence, 0.9);
}

// `import torch` on a loaded machine: the module's import-time allocations grow over most of a
// short run. The same growth outside an import is a leak.
TEST(Verdict, ImportsThatTakeMostOfTheRunAreStartup) {
  SiteEvidence evidence = SiteSimulator().run(40, [](int e, std::deque<Block>& live) {
    if (e < 34) live.push_back({e, 100000});
  });
  EXPECT_EQ(judge_site(evidence).verdict, Verdict::kLeak) << judge_site(evidence).reason;
  evidence.made_during = StartupPhase::kImport;
  SiteJudgement j = judge_site(evidence);
  EXPECT_EQ(j.verdict, Verdict::kStartup) << j.reason;
  EXPECT_NE(j.reason.find("importing"), std::string::npos) << j.reason;
}

// What runs before main runs once: what it keeps is start-up, however it grew while it ran. A
// library's initializers run once per load: a library loaded again and again that keeps a block
// each time is judged by its trend, a leak; in a run too short for a trend, start-up.
TEST(Verdict, BeforeMainIsStartupAndLibraryLoadsAreJudgedByTheirTrend) {
  SiteEvidence evidence = SiteSimulator().run(40, [](int e, std::deque<Block>& live) {
    if (e < 34) live.push_back({e, 100000});
  });
  evidence.made_during = StartupPhase::kBeforeMain;
  SiteJudgement before_main = judge_site(evidence);
  EXPECT_EQ(before_main.verdict, Verdict::kStartup) << before_main.reason;
  EXPECT_NE(before_main.reason.find("before main"), std::string::npos) << before_main.reason;
  EXPECT_GT(before_main.growth_bytes_per_min, 0) << "its figures are measured like any site's";
  evidence.made_during = StartupPhase::kLibraryLoad;
  EXPECT_EQ(judge_site(evidence).verdict, Verdict::kLeak) << judge_site(evidence).reason;
  evidence.live_bytes.resize(2);
  SiteJudgement short_run = judge_site(evidence);
  EXPECT_EQ(short_run.verdict, Verdict::kStartup) << short_run.reason;
  EXPECT_NE(short_run.reason.find("dlopen"), std::string::npos) << short_run.reason;
}

// The marker site of stacks past leakscope's memory budget mixes call paths: never a verdict of
// its own, but its growth is measured and said.
TEST(Verdict, OverBudgetSiteIsNotJudgedButItsGrowthIsShown) {
  SiteEvidence evidence = SiteSimulator().run(60, [](int e, std::deque<Block>& live) { live.push_back({e, 1000}); });
  evidence.over_budget = true;
  SiteJudgement j = judge_site(evidence);
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_NEAR(j.growth_bytes_per_min, 60000, 1);
  EXPECT_NE(j.reason.find("counted together, and growing"), std::string::npos) << j.reason;
}

// A sampled estimate resting on three recorded blocks moves by whole blocks of R bytes: no trend
// in it is judged (five runs of one 32-byte-per-request leak at 512 KiB were judged startup, leak,
// unknown and nothing); from five recorded blocks on, the evidence is judged as before.
TEST(Verdict, ASampledEstimateOfAFewRecordedBlocksIsNotJudged) {
  SiteEvidence evidence = SiteSimulator().run(30, [](int e, std::deque<Block>& live) { live.push_back({e, 1000}); });
  evidence.recorded_blocks = 3;
  evidence.relative_error = 1 / std::sqrt(3.0);
  SiteJudgement j = judge_site(evidence);
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_NE(j.reason.find("about 3 recorded allocations in this sampled run (±58%): too few to judge"), std::string::npos)
      << j.reason;
  evidence.recorded_blocks = 5;
  evidence.relative_error = 1 / std::sqrt(5.0);
  EXPECT_EQ(judge_site(evidence).verdict, Verdict::kLeak);
}

// The interpreter's free lists fill as a run starts and hold a bounded number of objects of each
// size: a cache, though the filling looks like growth.
TEST(Verdict, FreeListSiteIsACacheWhileItFills) {
  SiteEvidence evidence = SiteSimulator().run(30, [](int e, std::deque<Block>& live) { live.push_back({e, 1000}); });
  ASSERT_EQ(judge_site(evidence).verdict, Verdict::kLeak);
  evidence.free_list = true;
  SiteJudgement j = judge_site(evidence);
  EXPECT_EQ(j.verdict, Verdict::kCache);
  EXPECT_NE(j.reason.find("free lists"), std::string::npos) << j.reason;
}

TEST(Verdict, LeakWithBurstsIsALeak) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    if (e % 6 == 0) live.push_back({e, 50000});
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, BoundedLruCacheIsACache) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    for (int i = 0; i < 10; ++i) live.push_back({e, 4096});
    while (live.size() > 50) live.pop_front();  // evict the least recently inserted
  });
  EXPECT_EQ(j.verdict, Verdict::kCache) << j.reason;
  EXPECT_LT(j.leak_entropy, 0.4);  // 5 recent epochs of 60: log2(5) / log2(60)
  EXPECT_GT(j.median_birth_fraction, 0.9);
}

TEST(Verdict, CacheThatFilledDuringHalfTheRunIsACache) {
  SiteJudgement j = judge(40, [](int e, std::deque<Block>& live) {
    live.push_back({e, 4096});
    while (live.size() > 18) live.pop_front();
  });
  EXPECT_EQ(j.verdict, Verdict::kCache) << j.reason;
}

TEST(Verdict, RingBufferThatEndsOnItsHighSideIsACache) {
  // A std::deque kept at its last 300 entries, 24 pushed an epoch: its 512-byte chunks of 64
  // entries span 5 or 6 at a time once full, and the run ends on two samples of 6. The floor's
  // last step of one chunk is the swing the series made all along, not growth.
  constexpr int kPerEpoch = 24, kKept = 300, kPerChunk = 64;
  int next_chunk = 0;
  SiteJudgement j = judge(39, [&](int e, std::deque<Block>& live) {
    int tail = kPerEpoch * (e + 1), head = std::max(0, tail - kKept);
    for (; next_chunk <= (tail - 1) / kPerChunk; ++next_chunk) live.push_back({e, 512});
    while (next_chunk - static_cast<int>(live.size()) < head / kPerChunk) live.pop_front();
  });
  EXPECT_EQ(j.verdict, Verdict::kCache) << j.reason;
}

TEST(Verdict, CacheThatNeverEvictsIsALeak) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    for (int i = 0; i < 10; ++i) live.push_back({e, 4096});
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, StartupWeightsAreStartup) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    if (e == 0) live.push_back({0, 100 << 20});
  });
  EXPECT_EQ(j.verdict, Verdict::kStartup) << j.reason;
  EXPECT_LT(j.leak_entropy, 0.01);
  EXPECT_GT(j.confidence, 0.9);
}

TEST(Verdict, StartupThatLoadsOverSeveralEpochsIsStillStartup) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    if (e < 5) live.push_back({e, 20 << 20});
  });
  EXPECT_EQ(j.verdict, Verdict::kStartup) << j.reason;
}

TEST(Verdict, SawtoothWorkingSetIsNotALeak) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    if (e % 10 == 0) live.clear();
    live.push_back({e, 10000});
  });
  EXPECT_EQ(j.verdict, Verdict::kCache) << j.reason;
}

TEST(Verdict, NoiseIsNotALeak) {
  std::mt19937 random(7);
  SiteJudgement j = judge(60, [&random](int e, std::deque<Block>& live) {
    live.clear();
    int blocks = 20 + static_cast<int>(random() % 30);
    for (int i = 0; i < blocks; ++i) live.push_back({e, 1000});
  });
  EXPECT_EQ(j.verdict, Verdict::kCache) << j.reason;
}

TEST(Verdict, LeakThatStartsLateIsALeak) {
  SiteJudgement j = judge(100, [](int e, std::deque<Block>& live) {
    if (e >= 70) live.push_back({e, 2000});
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
  EXPECT_NEAR(j.growth_bytes_per_min, 120000, 1);
}

TEST(Verdict, LeakHiddenInTheSameSitesChurnIsALeak) {
  std::mt19937 random(11);
  std::deque<Block> kept;
  SiteJudgement j = judge(60, [&](int e, std::deque<Block>& live) {
    // 1 block in 100 is never freed; the other 99 live for one epoch at most.
    live.assign(kept.begin(), kept.end());
    int churn = 80 + static_cast<int>(random() % 40);
    for (int i = 0; i < churn; ++i) live.push_back({e, 1024});
    kept.push_back({e, 1024});
    live.push_back(kept.back());
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

// A data loader's iterator builds its working set (the epoch's index list, its workers' queues) as
// an epoch starts and lets it go when the next epoch builds its own, batches in flight coming and
// going meanwhile. The live bytes of a two-epoch training run's loop line, as recorded (torch's
// DataLoader, two workers): built in the first snapshots, settling, then one snapshot between the
// epochs catching the second being built. The floor rises at that snapshot, but the series only
// fills back up to where it was: no growth.
TEST(Verdict, AWorkingSetBuiltAgainAsTheNextEpochStartsIsNoLeak) {
  const double kibibytes[] = {117, 362, 393, 383, 419, 395, 390, 424, 408, 409, 416, 413, 424, 421,
                              423, 404, 417, 432, 248, 416, 411, 400, 408, 426, 428, 415, 428};
  const double seconds[] = {1.08, 1.19, 1.28, 1.36, 1.46, 1.54, 1.64, 1.74, 1.85, 1.98, 2.09, 2.23, 2.36, 2.52,
                            2.67, 2.84, 3.02, 3.21, 3.41, 3.62, 3.86, 4.09, 4.35, 4.63, 4.91, 5.23, 5.55};
  SiteEvidence evidence;
  for (size_t i = 0; i < std::size(kibibytes); ++i) {
    evidence.live_bytes.push_back({seconds[i], kibibytes[i] * 1024});
    // What is live at the end was born across the epoch, and some of it in the first.
    if (i % 3 == 0 || i >= 18) evidence.births.push_back({seconds[i], 24 * 1024});
  }
  evidence.now_s = 5.55;
  evidence.epochs = 45;
  SiteJudgement j = judge_site(evidence);
  EXPECT_NE(j.verdict, Verdict::kLeak) << j.reason;
}

// A working set of 4 MiB rebuilt each second, of which 128 KiB are never freed, as recorded with
// 1 s snapshots (and the first seconds' closer ones): the snapshots fall anywhere in the rebuild,
// so the floor is mostly the half-built working set, and the leak lifts the highs by only 2.5 % of
// the peak each epoch. Passing over the floor's rises that only fill back up must stop where the
// highs since stand above those before: still a leak.
TEST(Verdict, ALeakInAWorkingSetRebuiltEachEpochIsALeak) {
  const double kibibytes[] = {688,  1376, 2016, 2736, 3424, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096,
                              4096, 4096, 4096, 4096, 400,  1264, 2192, 3168, 4208, 4224, 4224, 4224, 4224, 4224, 4224,
                              4224, 1760, 3568, 4352, 4352, 4352, 4352, 880,  3472, 4480, 4480, 4480, 2016, 4608, 4608,
                              4608, 3888, 4736, 4736, 4624, 4864, 2160, 4992, 1120, 5120, 1696, 5248};
  const double seconds[] = {0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75,
                            0.80, 0.85, 0.90, 0.96, 1.02, 1.08, 1.15, 1.22, 1.30, 1.38, 1.47, 1.56, 1.66, 1.76, 1.87,
                            1.99, 2.11, 2.24, 2.38, 2.53, 2.69, 2.86, 3.04, 3.23, 3.43, 3.65, 3.87, 4.11, 4.37, 4.65,
                            4.94, 5.24, 5.57, 5.92, 6.29, 6.68, 7.10, 7.54, 8.02, 8.52, 9.05, 9.61};
  SiteEvidence evidence;
  for (size_t i = 0; i < std::size(kibibytes); ++i) evidence.live_bytes.push_back({seconds[i], kibibytes[i] * 1024});
  for (int epoch = 0; epoch < 9; ++epoch) evidence.births.push_back({epoch + 0.3, 128 * 1024});  // each epoch's leaked batches
  for (double born : {9.1, 9.2, 9.3, 9.4}) evidence.births.push_back({born, 1024 * 1024});  // the last epoch's working set
  evidence.now_s = 9.61;
  evidence.epochs = 57;
  SiteJudgement j = judge_site(evidence);
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, SawtoothOnARisingFloorIsALeak) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    if (e % 10 == 0) {
      while (!live.empty() && live.back().bytes == 10000) live.pop_back();  // release the working set
    }
    live.push_front({e, 3000});  // the part that is never released
    live.push_back({e, 10000});
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, LeakTooShortToJudgeIsUnknown) {
  SiteJudgement j = judge(3, [](int e, std::deque<Block>& live) { live.push_back({e, 1000}); });
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_NE(j.reason.find("too short"), std::string::npos);
}

TEST(Verdict, GrowthThatWasFreedAgainIsNotALeak) {
  SiteJudgement j = judge(60, [](int e, std::deque<Block>& live) {
    if (e < 55) {
      live.push_back({e, 1000});
    } else {
      while (live.size() > 5) live.pop_back();
    }
  });
  EXPECT_NE(j.verdict, Verdict::kLeak) << j.reason;
}

// A vector that keeps growing: one live block, re-allocated at double the size whenever the
// elements pushed at a steady rate fill it, so the last re-allocation can be up to half the run
// ago. Its bytes are all recent (leak entropy 0), yet it is a leak.
TEST(Verdict, VectorThatKeepsGrowingIsALeak) {
  for (int epochs : {20, 37, 60}) {
    SiteJudgement j = judge(epochs, [](int e, std::deque<Block>& live) {
      int64_t size = 1024 * (e + 1);  // elements pushed so far, in bytes
      int64_t capacity = live.empty() ? 0 : live.back().bytes;
      if (size > capacity) {
        int64_t grown = capacity == 0 ? 1024 : capacity;
        while (grown < size) grown *= 2;
        live.clear();
        live.push_back({e, grown});
      }
    });
    EXPECT_EQ(j.verdict, Verdict::kLeak) << epochs << ": " << j.reason;
  }
}

// Blocks grown by realloc one after another, each to a few times its size, none freed.
TEST(Verdict, ReallocChainThatGrowsIsALeak) {
  SiteJudgement j = judge(30, [](int e, std::deque<Block>& live) {
    if (e % 3 == 0) live.push_back({e, 4096});
    live.back() = {e, live.back().bytes * 2};
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, BurstsThreeEpochsApartAreALeak) {
  SiteJudgement j = judge(15, [](int e, std::deque<Block>& live) {
    if (e % 3 == 0) {
      for (int i = 0; i < 200; ++i) live.push_back({e, 1000});
    }
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, LeakThatStartsAfterAStartupRampIsALeak) {
  SiteJudgement j = judge(30, [](int e, std::deque<Block>& live) {
    if (e < 8) live.push_back({e, 100000});     // the ramp: imports, weights
    if (e >= 8) live.push_back({e, 250000});    // the leak, from then on
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, WarmUpThatFlattensIsNotALeak) {
  SiteJudgement j = judge(40, [](int e, std::deque<Block>& live) {
    if (e < 16) live.push_back({e, 50000});
  });
  EXPECT_NE(j.verdict, Verdict::kLeak) << j.reason;
  EXPECT_EQ(j.verdict, Verdict::kStartup) << j.reason;
}

TEST(Verdict, CacheStillFillingAtTheEndIsNeverACache) {
  SiteJudgement j = judge(30, [](int e, std::deque<Block>& live) {
    for (int i = 0; i < 10; ++i) live.push_back({e, 4096});
    while (live.size() > 1000) live.pop_front();  // a bound the run never reaches
  });
  EXPECT_EQ(j.verdict, Verdict::kLeak) << j.reason;
}

TEST(Verdict, FlatSiteWithoutTurnoverIsNotACache) {
  SiteJudgement j = judge(30, [](int e, std::deque<Block>& live) {
    if (e == 20) live.push_back({e, 1 << 20});  // allocated once, late, never touched again
  });
  EXPECT_NE(j.verdict, Verdict::kCache) << j.reason;
}

TEST(Verdict, BlocksOfZeroBytesAreNotJudgedAndSaySo) {
  SiteEvidence never_seen;  // no snapshot saw bytes: every point would be 0
  never_seen.now_s = 10;
  never_seen.epochs = 10;
  SiteJudgement j = judge_site(never_seen);
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_EQ(j.reason, "its blocks hold 0 bytes: nothing to judge");
  SiteJudgement flat = judge(20, [](int epoch, std::deque<Block>& live) { live.push_back({epoch, 0}); });
  EXPECT_EQ(flat.verdict, Verdict::kUnknown);
  EXPECT_EQ(flat.reason, j.reason);
}

TEST(Verdict, UnknownSaysWhatWouldTell) {
  SiteJudgement j = judge(4, [](int e, std::deque<Block>& live) { live.push_back({e, 1000}); });
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_NE(j.reason.find("run longer or use --interval 100ms"), std::string::npos) << j.reason;
}

// Snapshots already 40 ms apart: only a longer run gives more of them.
TEST(Verdict, UnknownAdvisesAShorterIntervalOnlyWhenSnapshotsWereFurtherApart) {
  SiteEvidence evidence;
  for (int i = 0; i < 4; ++i) evidence.live_bytes.push_back({0.04 * (i + 1), 1000.0 * (i + 1)});
  evidence.now_s = 0.16;
  evidence.epochs = 4;
  SiteJudgement j = judge_site(evidence);
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_EQ(j.reason, "too short to judge: 4 snapshots over 0.1 s; run longer") << j.reason;
}

TEST(LeakEntropy, IsZeroForOneBucketAndOneForAnEvenSpread) {
  EXPECT_EQ(leak_entropy({{0, 100}}, 10, 1), 0);
  std::vector<LiveByBirth> even;
  for (int e = 0; e < 64; ++e) even.push_back({static_cast<double>(e), 10});
  EXPECT_NEAR(leak_entropy(even, 64, 64), 1.0, 1e-9);
  EXPECT_NEAR(leak_entropy({{0, 5}, {0.5, 5}}, 64, 64), 0.0, 1e-9);
  // Two equal halves in two of four buckets: 1 bit of log2(4) = 2.
  EXPECT_NEAR(leak_entropy({{0, 5}, {2.5, 5}}, 4, 4), 0.5, 1e-9);
}

TEST(Trend, TheilSenIgnoresAnOutlierAndMannKendallSeesThroughNoise) {
  std::vector<SeriesPoint> line;
  for (int i = 0; i < 20; ++i) line.push_back({static_cast<double>(i), 3.0 * i});
  line[10].value = 1e9;
  EXPECT_NEAR(theil_sen_slope(line), 3.0, 1e-9);
  EXPECT_GT(mann_kendall(line).z, kTrendZ);
  std::vector<SeriesPoint> saw;
  for (int i = 0; i < 40; ++i) saw.push_back({static_cast<double>(i), static_cast<double>(i % 8)});
  EXPECT_LT(std::fabs(mann_kendall(saw).z), kTrendZ);
  std::vector<SeriesPoint> flat(10, {0, 5});
  for (int i = 0; i < 10; ++i) flat[i].time_s = i;
  EXPECT_EQ(mann_kendall(flat).z, 0);
}

}  // namespace
}  // namespace leakscope::report
