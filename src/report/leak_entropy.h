// File: leak_entropy.h
//
// Leak entropy (DESIGN.md, docs/ANALYSIS.md): how evenly a site's live bytes are spread over the
// birth times of the run so far.
//
// At snapshot k, split the run [0, T) into B = min(k + 1, 64) equal-width buckets of birth time
// and let p_b be the share of the site's live bytes born in bucket b. Then
//   LE = −Σ_b p_b log2 p_b / log2 B   ∈ [0, 1]   (0 when B = 1 or nothing is live)
// A steady leak keeps bytes from every period alive: LE → 1. Startup weights sit in the first
// bucket: LE ≈ 0. A bounded cache or working set holds recent births only: LE low, and falling
// as the run goes on.
#ifndef LEAKSCOPE_REPORT_LEAK_ENTROPY_H_
#define LEAKSCOPE_REPORT_LEAK_ENTROPY_H_

#include <cstdint>
#include <vector>

namespace leakscope::report {

struct LiveByBirth {
  double birth_s;  // when the bytes were born (start of their birth epoch), seconds since start
  int64_t bytes;
};

constexpr int kMaxEntropyBuckets = 64;

// leak_entropy() computes LE for live bytes `births` at time `now_s`, after `epochs` epochs
// (k + 1). Births at or after now_s fall in the last bucket; negative bytes are ignored.
double leak_entropy(const std::vector<LiveByBirth>& births, double now_s, uint32_t epochs);

// median_birth_fraction() is the birth time, as a fraction of now_s, by which half of the live
// bytes were born (0 = all at the start, 1 = all just now); 0 when nothing is live.
double median_birth_fraction(std::vector<LiveByBirth> births, double now_s);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_LEAK_ENTROPY_H_
