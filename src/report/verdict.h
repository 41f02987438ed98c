// File: verdict.h
//
// The verdict on one site: leak, cache, startup or unknown, with a confidence and the numbers
// behind it. Rules and thresholds are documented in docs/ANALYSIS.md and unit-tested on
// synthetic series (tests/report/verdict_test.cc).
//
//   leak     the floor of live bytes (at each snapshot, the least that stays live from then on)
//            grows (Mann–Kendall Z ≥ kTrendZ, Theil–Sen slope > 0, growth over the window ≥
//            kMinRelativeGrowth of the peak) over the whole run, or over its second half or last
//            quarter when those end above every earlier point by that much (new highs); what grew is still live (≥ kMinLiveShareOfPeak of the peak); and the live
//            bytes are spread over the run's birth times (leak entropy ≥ kMinLeakEntropy).
//   cache    not a leak; half the live bytes were born in the latest part of the run (median birth
//            at or after kRecentBirth of the run): a bounded cache or working set.
//   startup  not a leak; half the live bytes were born early (median birth ≤ kOldBirth of the run)
//            and live bytes are flat (|growth| ≤ kMaxFlatGrowth of the peak).
//   unknown  fewer than kMinSamples snapshots, nothing live, or none of the above.
#ifndef LEAKSCOPE_REPORT_VERDICT_H_
#define LEAKSCOPE_REPORT_VERDICT_H_

#include <string>
#include <vector>

#include "report/leak_entropy.h"
#include "report/trend.h"

namespace leakscope::report {

enum class Verdict { kLeak, kCache, kStartup, kUnknown };

const char* verdict_name(Verdict verdict);

constexpr size_t kMinSamples = 5;
constexpr double kTrendZ = 2.33;  // one-sided p ≈ 0.01
constexpr double kMinRelativeGrowth = 0.2;
constexpr double kMinLiveShareOfPeak = 0.5;
constexpr double kMinLeakEntropy = 0.3;
constexpr double kRecentBirth = 0.5;
constexpr double kOldBirth = 0.25;
constexpr double kMaxFlatGrowth = 0.2;
constexpr size_t kFullConfidenceSamples = 20;
constexpr size_t kLatelyPoints = 3;

struct SiteEvidence {
  std::vector<SeriesPoint> live_bytes;  // in time order, the last point being "now"
  std::vector<LiveByBirth> births;      // live bytes by birth time, now
  double now_s = 0;
  uint32_t epochs = 0;  // epochs so far (k + 1 at snapshot k)
};

struct SiteJudgement {
  Verdict verdict = Verdict::kUnknown;
  double confidence = 0;
  double leak_entropy = 0;
  double growth_bytes_per_min = 0;  // Theil–Sen of the floor: for a leak over the steepest
                                    // growing window, otherwise over the last quarter (now)
  double mann_kendall_z = 0;
  double relative_growth = 0;        // growth over that window / peak live bytes
  double median_birth_fraction = 0;  // 0 = born at the start, 1 = born now
  size_t samples = 0;
  std::string reason;  // one sentence, for the report
};

// judge_site() applies the rules above.
SiteJudgement judge_site(const SiteEvidence& evidence);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_VERDICT_H_
