// File: verdict.h
//
// The verdict on one site, or one group of sites: leak, cache, startup or unknown, with a
// confidence and the numbers behind it. Rules and thresholds are documented in docs/ANALYSIS.md
// and unit-tested on synthetic series (tests/report/verdict_test.cc). In short, on the site's
// floor (at each sample, the least of it that stays live from then on):
//
//   leak     the floor grows (Mann–Kendall Z ≥ kTrendZ, Theil–Sen slope > 0, growth over the
//            window ≥ kMinRelativeGrowth of the peak) over the site's whole series, or over its
//            later half or quarter when those make new highs; it has not stalled (it last rose
//            within a quarter of the series, or within kStallGaps of the time between its last
//            two rises when it rose in kMinSteps steps or more, as bursts and ever-larger
//            re-allocations do); the series itself trends
//            upwards too (the floor of noise rises as well); what grew is still live (≥
//            kMinLiveShareOfPeak of the peak); and it is kept: spread over the time it grew (leak
//            entropy ≥ kLowLeakEntropy), or held in a few blocks re-allocated ever larger, whose
//            series never falls back below its floor (at most 1 sample in 20 dips by kMaxDip).
//   cache    not a leak, and bounded with turnover: the recent window's (the last quarter of the
//            series) median stays within kMaxPlateauRise of the peak of everything before it,
//            while at least kMinTurnover of its live bytes were born within it.
//   startup  not a leak nor a cache: flat over the recent window, little born in it, half of the
//            live bytes born in the first half of the run (kOldBirth), and not still rising after
//            a rise of its floor by kMinRelativeGrowth of its peak.
//   unknown  anything else, with the reason and what would tell.
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
constexpr double kNearFinal = 0.05;      // a rise ends when the floor is within this share of the peak of its final value
constexpr double kSwingTrendZ = 1.645;  // below it (one-sided p = 0.05), a series since its floor's level shows no trend
// A floor's rise is a working set filling back up when the series' highs since then stand no more
// than this share of the peak above its highs before the fall: a leak lifts them, however small a
// share of each step it is.
constexpr double kRefillHighs = 0.01;
constexpr double kStallSpan = 0.25;      // a leak rose within this share of its series...
constexpr double kStallGaps = 2.5;       // ...or within this many times the gap between its last two rises,
constexpr int kMinSteps = 3;             // when it rose in at least this many steps
constexpr double kRecentWindow = 0.25;   // the recent window: this share of the series, at the end
constexpr size_t kRecentPoints = 3;      // and at least this many samples
constexpr double kMinTurnover = 0.25;    // a cache's bytes born within the recent window, of its live bytes
constexpr double kMaxPlateauRise = 0.1;  // a cache's recent median above all before it, of the peak
constexpr double kMaxDip = 0.1;          // a fall below the floor that counts as giving back growth, of the peak
constexpr double kMaxFlatRange = 0.2;    // startup: range within the recent window, of the peak
constexpr double kOldBirth = 0.5;        // startup: half the live bytes born by this share of the run
constexpr double kLowLeakEntropy = 0.3;  // below it, a leak's bytes are recent: re-allocated ever larger
constexpr size_t kFullConfidenceSamples = 20;

enum class StartupPhase : uint8_t { kNone, kImport, kLibraryLoad, kBeforeMain, kSeveral };

struct SiteEvidence {
  std::vector<SeriesPoint> live_bytes;  // in time order, the last point being "now"
  std::vector<LiveByBirth> births;      // live bytes by birth time, now
  double now_s = 0;
  uint32_t epochs = 0;  // epochs so far (k + 1 at snapshot k)
  uint64_t allocations = 0;  // blocks allocated so far, and live now: for the reason's words only
  int64_t live_blocks = 0;
  // Every block was allocated in a phase that runs once per module or library, however long it
  // takes: a Python import, a library's initializers (dlopen), the program's start before main.
  StartupPhase made_during = StartupPhase::kNone;
  // The site stands for every stack first seen after leakscope's memory budget was reached: many
  // call paths counted together, none to judge.
  bool over_budget = false;
  // The site stands for objects the interpreter keeps on its free lists, a bounded number of each
  // size (kFreeListFrame): a cache by construction, whatever its trend.
  bool free_list = false;
  // A sampled run's precision of its live heap bytes (sampled_precision()); 0 when exact.
  double recorded_blocks = 0;
  double relative_error = 0;
};

// A sampled estimate whose relative standard error is above this rests on a handful of recorded
// allocations: its series moves by whole recorded blocks, and no trend in it is judged.
constexpr double kMaxJudgedRelativeError = 0.5;

struct SiteJudgement {
  Verdict verdict = Verdict::kUnknown;
  double confidence = 0;
  double leak_entropy = 0;
  double growth_bytes_per_min = 0;  // Theil–Sen of the floor: for a leak over the steepest
                                    // growing window, otherwise over the recent window (now)
  double mann_kendall_z = 0;
  double relative_growth = 0;        // growth over that window / peak live bytes
  double median_birth_fraction = 0;  // 0 = born at the start, 1 = born now
  double turnover = 0;               // bytes born within the recent window / live bytes
  double growing_since_s = 0;        // leak: start of the window that grew
  double last_rise_s = 0;            // when the floor last reached (near) its final value
  size_t samples = 0;
  std::string reason;  // one sentence, for the report
};

// judge_site() applies the rules above.
SiteJudgement judge_site(const SiteEvidence& evidence);

// When a series' floor (its live_floor()) last rose, and how long its rises take. The floor's
// final value was (nearly) reached at last_rise_s; the level it left then had been reached gap_s
// before. A steady leak rose a moment ago; bursts rose one burst period ago at most; a vector that
// doubles its capacity rose at most one doubling period ago; growth that stopped rose long before
// anything that pace explains.
struct Rises {
  double last_rise_s = 0;
  double gap_s = 0;
  int steps = 0;  // rises of the floor by kNearFinal of the peak or more, counted cumulatively
};

// rises_of() measures the rises of `points`, whose largest value is `peak`.
Rises rises_of(const std::vector<SeriesPoint>& points, double peak);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_VERDICT_H_
