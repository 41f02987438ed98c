// File: site_series.h
//
// Live bytes of every site and the process's memory over time, sampled while a stream is read, in
// bounded memory: at most `max_points` samples are kept for the whole run. Samples are taken every
// `stride` snapshots; when they would exceed the bound, every other one is dropped and the stride
// doubles, so the kept samples stay evenly spread over the run however long it is.
#ifndef LEAKSCOPE_REPORT_SITE_SERIES_H_
#define LEAKSCOPE_REPORT_SITE_SERIES_H_

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "report/run_state.h"
#include "report/trend.h"

namespace leakscope::report {

struct ProcessSample {
  double time_s = 0;
  uint64_t rss_bytes = 0, pss_bytes = 0, anon_bytes = 0, file_bytes = 0;
  std::array<int64_t, internal::kDomainCount> tracked_bytes{};  // live bytes per domain
};

class SiteSeries {
 public:
  explicit SiteSeries(size_t max_points = 128) : max_points_(max_points) {}

  // observe() is called after each snapshot is applied to `state`.
  void observe(const RunState& state);

  // finish() makes sure the latest snapshot is the last sample. Call once, after the last frame.
  void finish(const RunState& state);

  // site() is the series of one site (empty if it never had live bytes at a sample).
  std::vector<SeriesPoint> site(uint32_t site) const;
  const std::vector<ProcessSample>& process() const { return process_; }

 private:
  struct Track {
    size_t first = 0;  // index in times_ of values[0]
    std::vector<int64_t> values;
  };

  void sample(const RunState& state);
  void halve();

  size_t max_points_;
  uint64_t observed_ = 0;
  uint64_t stride_ = 1;
  uint64_t last_sampled_ = ~0ull;  // observe() count at the last sample
  std::vector<double> times_;
  std::vector<ProcessSample> process_;
  std::unordered_map<uint32_t, Track> tracks_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SITE_SERIES_H_
