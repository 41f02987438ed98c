#include "report/verdict.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace leakscope::report {
namespace {

constexpr double kLateSlopeFactor = 1.5;

struct WindowTrend {
  double begin_s = 0;
  double slope_per_s = 0;
  double z = 0;      // Mann–Kendall on the floor
  double raw_z = 0;  // Mann–Kendall on the series itself
  double relative_growth = 0;
  bool growing = false;
};

WindowTrend trend_of(std::vector<SeriesPoint>::const_iterator begin, std::vector<SeriesPoint>::const_iterator end,
                     double peak) {
  WindowTrend trend;
  std::vector<SeriesPoint> floor = live_floor(std::vector<SeriesPoint>(begin, end));
  trend.begin_s = begin->time_s;
  trend.slope_per_s = theil_sen_slope(floor);
  trend.z = mann_kendall(floor).z;
  double span = (end - 1)->time_s - begin->time_s;
  trend.relative_growth = trend.slope_per_s * span / std::max(peak, 1.0);
  // The floor of noise rises too (the least of fewer and fewer samples), so the series itself must
  // trend upwards as well: noise and a sawtooth do not, a leak does, whatever churns beside it.
  trend.raw_z = mann_kendall(std::vector<SeriesPoint>(begin, end)).z;
  trend.growing = trend.z >= kTrendZ && trend.raw_z >= kTrendZ && trend.slope_per_s > 0 &&
                  trend.relative_growth >= kMinRelativeGrowth;
  return trend;
}

// The window that grows: the whole series, or its later half or quarter (by time, each with at
// least kMinSamples points) when that grows markedly faster (kLateSlopeFactor), as a leak that
// starts late does. A later window counts only if the site now stands above everything before it
// by kMinRelativeGrowth of its peak: the last tooth of a sawtooth climbs back to old peaks, a leak
// that starts late makes new ones.
WindowTrend steepest_window(const std::vector<SeriesPoint>& points, double peak) {
  WindowTrend whole = trend_of(points.begin(), points.end(), peak);
  WindowTrend decided = whole;
  double first = points.front().time_s, now = points.back().time_s;
  for (double share : {0.5, 0.25}) {
    auto begin = std::lower_bound(points.begin(), points.end(), now - share * (now - first),
                                  [](const SeriesPoint& point, double time) { return point.time_s < time; });
    if (points.end() - begin < static_cast<long>(kMinSamples) || begin == points.begin()) continue;
    double before = 0;
    for (auto point = points.begin(); point != begin; ++point) before = std::max(before, point->value);
    if (points.back().value - before < kMinRelativeGrowth * peak) continue;
    WindowTrend window = trend_of(begin, points.end(), peak);
    double bar = !decided.growing ? 0 : decided.begin_s == whole.begin_s ? kLateSlopeFactor * whole.slope_per_s : decided.slope_per_s;
    if (window.growing && window.slope_per_s > bar) decided = window;
  }
  return decided;
}

double clamp01(double value) { return std::clamp(value, 0.0, 1.0); }

// remedy() says how to get more snapshots of a site seen `samples` times over `span_s`: a shorter
// interval only where they were further apart than the one it names.
std::string remedy(size_t samples, double span_s) {
  constexpr double kAdvisedInterval = 0.1;
  bool sparse = samples < 2 || span_s / static_cast<double>(samples - 1) > kAdvisedInterval * 1.5;
  return fmt::format("{} snapshot{} over {:.1f} s; run longer{}", samples, samples == 1 ? "" : "s", span_s,
                     sparse ? " or use --interval 100ms" : "");
}

}  // namespace

Rises rises_of(const std::vector<SeriesPoint>& points, double peak) {
  std::vector<SeriesPoint> floor = live_floor(points);
  double tolerance = kNearFinal * peak;
  auto reached = [&](double level) {
    size_t i = 0;
    while (i + 1 < floor.size() && floor[i].value < level - tolerance) ++i;
    return i;
  };
  Rises rises;
  size_t last = reached(floor.back().value);
  // A bounded site that swings by a block or two (a ring buffer's chunks, a pool's slabs) ends on
  // the floor's top whenever the last samples fall on its high side: a last rise no larger than a
  // fall the series itself made while the floor held the level it left, with no trend in the
  // series since, is that swing, not growth; only the last step is passed over so, for a steady
  // leak in churn, which trends, still rose a step ago. Past that swing, a rise after which the
  // series only fills back up to the highs it had before that fall (kRefillHighs), with no trend
  // since, is no growth either (a data loader's working set, let go and built again as an epoch
  // starts, the floor's swing after it being noise): growth lifts the highs with the floor, and
  // passing over rise after rise, the highs since stand further and further above those before.
  for (bool first = true; last > 0; first = false) {
    size_t left = reached(floor[last - 1].value);
    double rise = floor[last].value - floor[last - 1].value;
    double highest = points[left].value, largest_fall = 0;
    for (size_t i = left + 1; i < last; ++i) {
      largest_fall = std::max(largest_fall, highest - points[i].value);
      highest = std::max(highest, points[i].value);
    }
    if (largest_fall < rise - tolerance) break;
    auto trend_since = [&](size_t from) {
      return mann_kendall(std::vector<SeriesPoint>(points.begin() + static_cast<long>(from), points.end())).z;
    };
    double highest_since = 0;
    for (size_t i = last; i < points.size(); ++i) highest_since = std::max(highest_since, points[i].value);
    bool passed = first ? trend_since(left) < kSwingTrendZ
                        : highest_since <= highest + kRefillHighs * peak && trend_since(last) < kSwingTrendZ;
    if (!passed) break;
    last = left;
  }
  rises.last_rise_s = floor[last].time_s;
  if (last > 0) rises.gap_s = rises.last_rise_s - floor[reached(floor[last - 1].value)].time_s;
  double level = floor.front().value;
  for (const SeriesPoint& point : floor) {
    if (point.value - level < tolerance) continue;
    ++rises.steps;
    level = point.value;
  }
  return rises;
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLeak: return "leak";
    case Verdict::kCache: return "cache";
    case Verdict::kStartup: return "startup";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

constexpr const char* kOverBudgetReason = "every stack first seen after leakscope's memory budget was reached, counted together";
constexpr const char* kOverBudgetRemedy = ": no one call path to judge (a larger max_memory tells them apart)";

const char* startup_reason(StartupPhase phase) {
  switch (phase) {
    case StartupPhase::kImport: return "made while importing modules: import-time code runs once per module";
    case StartupPhase::kLibraryLoad: return "made while loading a library (dlopen): its initializers run once per load";
    case StartupPhase::kBeforeMain: return "made before main, by the initializers of the program and its libraries";
    case StartupPhase::kSeveral: return "made while importing modules and loading libraries: code that runs once each";
    case StartupPhase::kNone: break;
  }
  return "";
}

SiteJudgement judge_site(const SiteEvidence& evidence) {
  SiteJudgement judgement;
  const std::vector<SeriesPoint>& points = evidence.live_bytes;
  judgement.samples = points.size();
  judgement.leak_entropy = leak_entropy(evidence.births, evidence.now_s, evidence.epochs);
  judgement.median_birth_fraction = median_birth_fraction(evidence.births, evidence.now_s);
  // Blocks of 0 bytes (malloc(0), an empty buffer's) hold nothing whose trend could tell anything.
  if (std::none_of(points.begin(), points.end(), [](const SeriesPoint& point) { return point.value > 0; })) {
    judgement.reason = "its blocks hold 0 bytes: nothing to judge";
    return judgement;
  }
  if (points.size() < kMinSamples && evidence.over_budget) {
    judgement.reason = std::string(kOverBudgetReason) + kOverBudgetRemedy;
    return judgement;
  }
  // Made while starting up, in a run too short for a trend: start-up by what made it.
  if (evidence.made_during != StartupPhase::kNone && points.size() < kMinSamples && !points.empty() &&
      points.back().value > 0) {
    judgement.verdict = Verdict::kStartup;
    judgement.confidence = clamp01(static_cast<double>(points.size()) / kFullConfidenceSamples);
    judgement.reason = startup_reason(evidence.made_during);
    return judgement;
  }
  if (points.size() < kMinSamples) {
    double span = points.empty() ? 0 : points.back().time_s - points.front().time_s;
    judgement.reason = points.size() > 0 && points.front().time_s > 0.5 * evidence.now_s
                           ? fmt::format("first live at {:.1f} s, too late to judge: {}", points.front().time_s,
                                         remedy(points.size(), span))
                           : fmt::format("too short to judge: {}", remedy(points.size(), span));
    return judgement;
  }
  double live = points.back().value;
  double peak = 0;
  for (const SeriesPoint& point : points) peak = std::max(peak, point.value);
  double first_s = points.front().time_s, now_s = points.back().time_s, span_s = now_s - first_s;

  WindowTrend decided = steepest_window(points, peak);
  Rises rises = rises_of(points, peak);
  judgement.last_rise_s = rises.last_rise_s;
  // Growth in a few big steps may pause longer than a quarter of the series, but two steps make no
  // pace to go by: a library's registrations made in two loads are not a leak.
  double allowance = rises.steps >= kMinSteps ? std::max(kStallSpan * span_s, kStallGaps * rises.gap_s) : kStallSpan * span_s;
  bool still_rising = now_s - rises.last_rise_s <= allowance;
  bool still_live = live >= kMinLiveShareOfPeak * peak;
  judgement.mann_kendall_z = decided.z;
  judgement.relative_growth = decided.relative_growth;
  double samples_factor = clamp01(static_cast<double>(points.size()) / kFullConfidenceSamples);

  // The recent window: its floor's slope is the rate "now", its births the turnover.
  auto recent = std::lower_bound(points.begin(), points.end(), now_s - kRecentWindow * span_s,
                                 [](const SeriesPoint& point, double time) { return point.time_s < time; });
  if (points.end() - recent < static_cast<long>(kRecentPoints)) recent = points.end() - static_cast<long>(kRecentPoints);
  std::vector<SeriesPoint> recent_points(recent, points.end());
  judgement.growth_bytes_per_min = theil_sen_slope(live_floor(recent_points)) * 60;
  // Bytes born since the sample before the window (the window's first interval starts there).
  double window_start_s = recent == points.begin() ? recent->time_s : (recent - 1)->time_s;
  double born_recently = 0;
  for (const LiveByBirth& birth : evidence.births) {
    if (birth.bytes > 0 && birth.birth_s >= window_start_s) born_recently += static_cast<double>(birth.bytes);
  }
  judgement.turnover = live > 0 ? std::min(born_recently / live, 1.0) : 0;

  if (live <= 0) {
    judgement.reason = "nothing live now";
    return judgement;
  }
  if (evidence.free_list) {
    judgement.verdict = Verdict::kCache;
    judgement.reason = "kept by the interpreter on its free lists, which hold a bounded number of objects of each size";
    return judgement;
  }
  if (evidence.relative_error > kMaxJudgedRelativeError) {
    judgement.reason = fmt::format("about {:.0f} recorded allocation{} in this sampled run (±{:.0f}%): too few to judge; "
                                   "an exact run, or a smaller --sample, records more",
                                   std::max(1.0, evidence.recorded_blocks), evidence.recorded_blocks < 1.5 ? "" : "s",
                                   std::min(100.0, 100 * evidence.relative_error));
    return judgement;
  }
  // Its trend is measured like any site's, for the report to show; it judges no one call path.
  if (evidence.over_budget) {
    judgement.reason = std::string(kOverBudgetReason) + (decided.growing ? ", and growing" : "") + kOverBudgetRemedy;
    return judgement;
  }
  // Imports and what runs before main happen once per module and per process, however long they
  // take; a library's initializers run once per load, and a library loaded again and again is
  // judged by its trend like any code.
  if (evidence.made_during == StartupPhase::kImport || evidence.made_during == StartupPhase::kBeforeMain ||
      evidence.made_during == StartupPhase::kSeveral) {
    judgement.verdict = Verdict::kStartup;
    judgement.confidence = samples_factor;
    judgement.reason = startup_reason(evidence.made_during);
    return judgement;
  }
  // A leak keeps bytes from across the time it grew (leak entropy), or keeps what it grew in a few
  // blocks re-allocated ever larger: then the series never falls back below what it reached.
  size_t dips = 0;
  std::vector<SeriesPoint> floor = live_floor(points);
  for (size_t i = 0; i < points.size(); ++i) dips += points[i].value - floor[i].value > kMaxDip * peak;
  bool holds_what_it_grew = dips <= std::max<size_t>(1, points.size() / 20);
  bool keeps = judgement.leak_entropy >= kLowLeakEntropy || holds_what_it_grew;
  if (decided.growing && still_rising && still_live && keeps) {
    judgement.verdict = Verdict::kLeak;
    judgement.growth_bytes_per_min = decided.slope_per_s * 60;
    judgement.growing_since_s = decided.begin_s;
    judgement.confidence = std::min({clamp01(decided.z / (2 * kTrendZ)), clamp01(decided.relative_growth / 0.4), samples_factor});
    std::string how = decided.begin_s > first_s ? fmt::format("grows since {:.1f} s", decided.begin_s) : "grows";
    if (judgement.leak_entropy >= kLowLeakEntropy) {
      judgement.reason = fmt::format("{} (Mann-Kendall Z {:.1f}) and keeps bytes from across that time (leak entropy {:.2f})",
                                     how, decided.z, judgement.leak_entropy);
    } else if (evidence.allocations > 2 * static_cast<uint64_t>(evidence.live_blocks)) {
      judgement.reason = fmt::format("{} (Mann-Kendall Z {:.1f}) in a few blocks re-allocated ever larger ({} "
                                     "allocations for {} live block{}, leak entropy {:.2f})",
                                     how, decided.z, evidence.allocations, evidence.live_blocks,
                                     evidence.live_blocks == 1 ? "" : "s", judgement.leak_entropy);
    } else {
      judgement.reason = fmt::format("{} (Mann-Kendall Z {:.1f}) and keeps what it grew, most of it born late in the "
                                     "run (leak entropy {:.2f})",
                                     how, decided.z, judgement.leak_entropy);
    }
    return judgement;
  }

  double before_high = 0, recent_high = 0, recent_low = points.back().value;
  for (auto point = points.begin(); point != recent; ++point) before_high = std::max(before_high, point->value);
  for (auto point = recent; point != points.end(); ++point) {
    recent_high = std::max(recent_high, point->value);
    recent_low = std::min(recent_low, point->value);
  }
  // Bounded: the recent window's typical level (its median) stays within what came before it.
  std::vector<double> recent_values;
  for (auto point = recent; point != points.end(); ++point) recent_values.push_back(point->value);
  std::nth_element(recent_values.begin(), recent_values.begin() + static_cast<long>(recent_values.size() / 2), recent_values.end());
  double recent_median = recent_values[recent_values.size() / 2];
  bool has_history = recent != points.begin();
  bool bounded = has_history && recent_median <= before_high + kMaxPlateauRise * peak;
  double recent_span_s = now_s - window_start_s;
  if (bounded && judgement.turnover >= kMinTurnover) {
    judgement.verdict = Verdict::kCache;
    judgement.confidence = std::min({clamp01(judgement.turnover / (2 * kMinTurnover)), samples_factor});
    judgement.reason = fmt::format("bounded: within its earlier range over the last {:.1f} s while {:.0f}% of its bytes were born anew",
                                   recent_span_s, judgement.turnover * 100);
    return judgement;
  }
  bool flat = recent_high - recent_low <= kMaxFlatRange * peak;
  bool old = judgement.median_birth_fraction <= kOldBirth;
  // Growth that has not stopped, significant or not, is no resident's.
  bool rose = floor.back().value - floor.front().value >= kMinRelativeGrowth * peak;
  if (flat && old && judgement.turnover < kMinTurnover && !(rose && still_rising)) {
    judgement.verdict = Verdict::kStartup;
    double age = clamp01(1.5 - judgement.median_birth_fraction / kOldBirth);
    double stillness = clamp01(1.5 - (recent_high - recent_low) / (kMaxFlatRange * std::max(peak, 1.0)));
    judgement.confidence = std::min({age, stillness, samples_factor});
    judgement.reason = fmt::format("born early (half by {:.0f}% of the run) and flat since", judgement.median_birth_fraction * 100);
    return judgement;
  }
  if (decided.growing && !still_live) {
    judgement.reason = fmt::format("grew, then {:.0f}% of its peak was freed", (1 - live / peak) * 100);
  } else if (decided.growing) {
    judgement.reason = fmt::format("grew until {:.1f} s and has been flat since without turnover: a resident built up "
                                   "early, or a leak that paused; run longer to tell",
                                   rises.last_rise_s);
  } else if (decided.z >= kTrendZ && decided.slope_per_s > 0) {
    judgement.reason = fmt::format("grows slowly: {:.0f}% of its peak over the run", decided.relative_growth * 100);
  } else if (decided.z > 1 && decided.slope_per_s > 0) {
    judgement.reason = fmt::format("may be growing (Mann-Kendall Z {:.1f}, below {:.2f}): {}", decided.z, kTrendZ,
                                   remedy(points.size(), span_s));
  } else if (flat && !old) {
    judgement.reason = fmt::format("allocated late (half of it after {:.0f}% of the run) and flat since: run longer to "
                                   "tell a resident from a leak",
                                   judgement.median_birth_fraction * 100);
  } else {
    judgement.reason = fmt::format("changes without a trend, a bound with turnover, or a flat old plateau: {}",
                                   remedy(points.size(), span_s));
  }
  return judgement;
}

}  // namespace leakscope::report
