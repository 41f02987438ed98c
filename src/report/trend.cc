#include "report/trend.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace leakscope::report {

std::vector<SeriesPoint> live_floor(std::vector<SeriesPoint> points) {
  for (size_t i = points.size(); i-- > 1;) points[i - 1].value = std::min(points[i - 1].value, points[i].value);
  return points;
}

double theil_sen_slope(const std::vector<SeriesPoint>& points) {
  std::vector<double> slopes;
  slopes.reserve(points.size() * (points.size() - (points.empty() ? 0 : 1)) / 2);
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      double dt = points[j].time_s - points[i].time_s;
      if (dt > 0) slopes.push_back((points[j].value - points[i].value) / dt);
    }
  }
  if (slopes.empty()) return 0;
  size_t middle = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + static_cast<long>(middle), slopes.end());
  double upper = slopes[middle];
  if (slopes.size() % 2 == 1) return upper;
  double lower = *std::max_element(slopes.begin(), slopes.begin() + static_cast<long>(middle));
  return (lower + upper) / 2;
}

MannKendall mann_kendall(const std::vector<SeriesPoint>& points) {
  MannKendall result;
  size_t n = points.size();
  if (n < 3) return result;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      double difference = points[j].value - points[i].value;
      result.s += difference > 0 ? 1 : difference < 0 ? -1 : 0;
    }
  }
  std::map<double, int64_t> ties;
  for (const SeriesPoint& point : points) ++ties[point.value];
  double tie_term = 0;
  for (const auto& [value, count] : ties) tie_term += static_cast<double>(count * (count - 1) * (2 * count + 5));
  double count = static_cast<double>(n);
  result.variance = (count * (count - 1) * (2 * count + 5) - tie_term) / 18.0;
  if (result.variance <= 0) return result;
  double root = std::sqrt(result.variance);
  if (result.s > 0) result.z = static_cast<double>(result.s - 1) / root;
  if (result.s < 0) result.z = static_cast<double>(result.s + 1) / root;
  return result;
}

}  // namespace leakscope::report
