// File: trend.h
//
// Robust trend of a time series, as docs/ANALYSIS.md defines it.
//
// Theil–Sen slope: the median of the slopes (y_j − y_i) / (t_j − t_i) over all pairs i < j. Up to
// ~29% of the points can be arbitrary without moving it, so one burst or a freed batch does not
// read as growth, and a ramp confined to the first few points (startup) gives a slope near 0.
//
// Mann–Kendall test: S = Σ_{i<j} sign(y_j − y_i). Under "no trend", S is near-normal with
//   Var(S) = [n(n−1)(2n+5) − Σ_g t_g(t_g−1)(2t_g+5)] / 18   (t_g: sizes of groups of tied values)
// and Z = (S − 1)/√Var for S > 0, (S + 1)/√Var for S < 0, 0 otherwise. Z ≥ 2.33 means a monotone
// increase at one-sided p ≤ 0.01. A sawtooth or noise has S near 0 whatever its amplitude.
//
// Both are O(n²); series are kept at ≤ 128 points (live_series.h), so that is ≤ 8128 pairs.
#ifndef LEAKSCOPE_REPORT_TREND_H_
#define LEAKSCOPE_REPORT_TREND_H_

#include <cstdint>
#include <vector>

namespace leakscope::report {

struct SeriesPoint {
  double time_s;
  double value;
};

// live_floor() is the suffix minimum of a series of live bytes: at each point, the least that
// stays live from then on. A leak's floor rises with it; a sawtooth's or a working set's floor
// stays at its lowest point, however high its peaks. It never decreases.
std::vector<SeriesPoint> live_floor(std::vector<SeriesPoint> points);

// theil_sen_slope() is the median pairwise slope (value per second); 0 for fewer than 2 points
// or when all points share one time.
double theil_sen_slope(const std::vector<SeriesPoint>& points);

struct MannKendall {
  int64_t s = 0;
  double variance = 0;
  double z = 0;
};

// mann_kendall() tests `points` (in time order) for a monotone trend.
MannKendall mann_kendall(const std::vector<SeriesPoint>& points);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_TREND_H_
