#include "report/verdict.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace leakscope::report {
namespace {

struct WindowTrend {
  double slope_per_s = 0;
  double z = 0;
  double relative_growth = 0;
  bool growing = false;
};

WindowTrend trend_of(const std::vector<SeriesPoint>& points, double peak) {
  WindowTrend trend;
  std::vector<SeriesPoint> floor = live_floor(points);
  trend.slope_per_s = theil_sen_slope(floor);
  trend.z = mann_kendall(floor).z;
  double span = points.back().time_s - points.front().time_s;
  trend.relative_growth = trend.slope_per_s * span / std::max(peak, 1.0);
  trend.growing = trend.z >= kTrendZ && trend.slope_per_s > 0 && trend.relative_growth >= kMinRelativeGrowth;
  return trend;
}

double clamp01(double value) { return std::clamp(value, 0.0, 1.0); }

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLeak: return "leak";
    case Verdict::kCache: return "cache";
    case Verdict::kStartup: return "startup";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

SiteJudgement judge_site(const SiteEvidence& evidence) {
  SiteJudgement judgement;
  const std::vector<SeriesPoint>& points = evidence.live_bytes;
  judgement.samples = points.size();
  judgement.leak_entropy = leak_entropy(evidence.births, evidence.now_s, evidence.epochs);
  judgement.median_birth_fraction = median_birth_fraction(evidence.births, evidence.now_s);
  if (points.size() < kMinSamples) {
    judgement.reason = fmt::format("too short to judge: {} snapshots (needs {})", points.size(), kMinSamples);
    return judgement;
  }
  double live = points.back().value;
  double peak = 0;
  for (const SeriesPoint& point : points) peak = std::max(peak, point.value);

  // The whole run, its second half and its last quarter: a leak that starts late grows in the
  // later windows only, and its rate is that of the steepest window that grows.
  WindowTrend whole = trend_of(points, peak);
  WindowTrend decided = whole;
  // A later window counts only if it ends above everything before it: the last tooth of a
  // sawtooth climbs back to old peaks, a leak that starts late makes new ones.
  for (size_t divisor : {size_t{2}, size_t{4}}) {
    size_t length = points.size() / divisor;
    if (length < kMinSamples) break;
    auto window_begin = points.end() - static_cast<long>(length);
    double before = 0;
    for (auto point = points.begin(); point != window_begin; ++point) before = std::max(before, point->value);
    if (live - before < kMinRelativeGrowth * peak) continue;
    WindowTrend window = trend_of(std::vector<SeriesPoint>(window_begin, points.end()), peak);
    if (window.growing && (!decided.growing || window.slope_per_s > decided.slope_per_s)) decided = window;
  }
  // A leak is still growing: over the last quarter (at least kLatelyPoints points) its floor,
  // which never decreases, ends higher than it starts. A cache that filled up and a one-off growth
  // that stopped are flat there.
  size_t lately = std::max(points.size() / 4, kLatelyPoints);
  std::vector<SeriesPoint> last_quarter = live_floor({points.end() - static_cast<long>(lately), points.end()});
  bool growing_lately = last_quarter.back().value > last_quarter.front().value;
  // Leaks report the rate of the window that grew; everything else its rate now.
  judgement.growth_bytes_per_min = theil_sen_slope(last_quarter) * 60;
  judgement.mann_kendall_z = decided.z;
  judgement.relative_growth = decided.relative_growth;
  double samples_factor = clamp01(static_cast<double>(points.size()) / kFullConfidenceSamples);

  if (live <= 0) {
    judgement.reason = "nothing live now";
    return judgement;
  }
  bool still_live = live >= kMinLiveShareOfPeak * peak;
  if (decided.growing && growing_lately && still_live && judgement.leak_entropy >= kMinLeakEntropy) {
    judgement.verdict = Verdict::kLeak;
    judgement.growth_bytes_per_min = decided.slope_per_s * 60;
    judgement.confidence = std::min({clamp01(decided.z / (2 * kTrendZ)), clamp01(judgement.leak_entropy / 0.6), samples_factor});
    judgement.reason = fmt::format("grows steadily (Mann-Kendall Z {:.1f}) and keeps bytes from across the run "
                                   "(leak entropy {:.2f})", decided.z, judgement.leak_entropy);
    return judgement;
  }
  if (judgement.median_birth_fraction >= kRecentBirth) {
    judgement.verdict = Verdict::kCache;
    double recency = clamp01((judgement.median_birth_fraction - kRecentBirth) / (1 - kRecentBirth) + 0.5);
    double bounded = decided.growing && growing_lately ? 0.5 : 1.0;
    judgement.confidence = std::min({recency, bounded, samples_factor});
    judgement.reason = fmt::format("live bytes are recent (half born after {:.0f}% of the run){}",
                                   judgement.median_birth_fraction * 100,
                                   decided.growing && growing_lately ? ", still growing with few old births"
                                                                     : " and bounded");
    return judgement;
  }
  if (judgement.median_birth_fraction <= kOldBirth && std::fabs(whole.relative_growth) <= kMaxFlatGrowth) {
    judgement.verdict = Verdict::kStartup;
    double age = clamp01(1 - judgement.median_birth_fraction / kOldBirth + 0.5);
    double flat = clamp01(1 - std::fabs(whole.relative_growth) / kMaxFlatGrowth + 0.5);
    judgement.confidence = std::min({age, flat, samples_factor});
    judgement.reason = fmt::format("born early (half by {:.0f}% of the run) and flat since",
                                   judgement.median_birth_fraction * 100);
    return judgement;
  }
  if (decided.growing && !still_live) {
    judgement.reason = "grew, then most of it was freed";
  } else if (decided.growing && !growing_lately) {
    judgement.reason = "grew earlier in the run, flat over its last quarter";
  } else if (decided.growing) {
    judgement.reason = fmt::format("grows, but its live bytes were born in too few periods to call it a leak "
                                   "(leak entropy {:.2f})", judgement.leak_entropy);
  } else {
    judgement.reason = "neither growing nor clearly early or recent";
  }
  return judgement;
}

}  // namespace leakscope::report
