#include "report/leak_entropy.h"

#include <algorithm>
#include <cmath>

namespace leakscope::report {

double leak_entropy(const std::vector<LiveByBirth>& births, double now_s, uint32_t epochs) {
  int buckets = static_cast<int>(std::min<uint32_t>(epochs, kMaxEntropyBuckets));
  if (buckets <= 1 || now_s <= 0) return 0;
  std::vector<double> bytes(static_cast<size_t>(buckets), 0.0);
  double total = 0;
  for (const LiveByBirth& birth : births) {
    if (birth.bytes <= 0) continue;
    int bucket = static_cast<int>(std::floor(birth.birth_s / now_s * buckets));
    bucket = std::clamp(bucket, 0, buckets - 1);
    bytes[static_cast<size_t>(bucket)] += static_cast<double>(birth.bytes);
    total += static_cast<double>(birth.bytes);
  }
  if (total <= 0) return 0;
  double entropy = 0;
  for (double share : bytes) {
    if (share <= 0) continue;
    double p = share / total;
    entropy -= p * std::log2(p);
  }
  return entropy / std::log2(static_cast<double>(buckets));
}

double median_birth_fraction(std::vector<LiveByBirth> births, double now_s) {
  births.erase(std::remove_if(births.begin(), births.end(), [](const LiveByBirth& b) { return b.bytes <= 0; }),
               births.end());
  if (births.empty() || now_s <= 0) return 0;
  std::sort(births.begin(), births.end(), [](const LiveByBirth& a, const LiveByBirth& b) { return a.birth_s < b.birth_s; });
  double total = 0;
  for (const LiveByBirth& birth : births) total += static_cast<double>(birth.bytes);
  double running = 0;
  for (const LiveByBirth& birth : births) {
    running += static_cast<double>(birth.bytes);
    if (running * 2 >= total) return std::clamp(birth.birth_s / now_s, 0.0, 1.0);
  }
  return 1;
}

}  // namespace leakscope::report
