// File: live_series.h
//
// Live bytes over time, per site, per task name and per thread, and the process's memory, sampled
// while a stream is read, in bounded memory: at most `max_points` samples are kept for the whole
// run. Every snapshot is sampled until the bound is reached; then samples are thinned to a minimum
// spacing in time that doubles each time the bound is reached again, so the kept samples stay
// evenly spread over the run's time however long it is, even where snapshots came faster (the
// ramp at the start of a run, docs/ANALYSIS.md). A track keeps its values as varint differences
// from the one before, a site's in a slot of a vector by site id: most sites change seldom, and a
// process can have hundreds of thousands of them.
#ifndef LEAKSCOPE_REPORT_LIVE_SERIES_H_
#define LEAKSCOPE_REPORT_LIVE_SERIES_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/chunked_vector.h"
#include "report/run_state.h"
#include "report/trend.h"

namespace leakscope::report {

struct ProcessSample {
  double time_s = 0;
  uint64_t rss_bytes = 0, pss_bytes = 0, anon_bytes = 0, file_bytes = 0;
  uint64_t overhead_bytes = 0;  // leakscope's own memory, part of rss_bytes
  std::array<int64_t, internal::kDomainCount> tracked_bytes{};  // live bytes per domain
};

class LiveSeries {
 public:
  explicit LiveSeries(size_t max_points = 128) : max_points_(max_points) {}

  // observe() is called after each snapshot is applied to `state`.
  void observe(const RunState& state);

  // finish() makes sure the latest snapshot is the last sample. Call once, after the last frame.
  void finish(const RunState& state);

  // Series of one site, task name ("" = no task) or thread index; empty if never live at a sample.
  std::vector<SeriesPoint> site(uint32_t site) const;
  std::vector<SeriesPoint> task(const std::string& name) const;
  std::vector<SeriesPoint> thread(uint32_t thread) const;

  // Task names and thread indexes that were live at some sample.
  std::vector<std::string> task_names() const;
  std::vector<uint32_t> thread_indexes() const;

  const std::vector<ProcessSample>& process() const { return process_; }

 private:
  // Track: one key's values from sample `first` to the latest, each as the zigzag varint of its
  // difference from the one before (the first from 0). Up to kInlineBytes of them are held in the
  // track itself: most sites' series are short, or flat (a byte a sample).
  class Track {
   public:
    Track() {}
    Track(const Track&) = delete;
    Track& operator=(const Track&) = delete;
    ~Track() { clear(); }

    bool tracked() const { return size_ != 0; }
    uint32_t first() const { return first_; }  // index in times_ of its first value
    // begin_at() starts an untracked track at sample `first`; append() adds its next value.
    void begin_at(uint32_t first) { first_ = first; }
    void append(int64_t value);
    std::vector<int64_t> values() const;
    void clear();  // untracked again

   private:
    static constexpr uint32_t kInlineBytes = 16;
    bool on_heap() const { return size_ > kInlineBytes; }
    const uint8_t* bytes() const { return on_heap() ? heap_.data : inline_; }

    int64_t last_ = 0;  // the latest value
    uint32_t first_ = 0;
    uint32_t size_ = 0;  // bytes of differences
    struct Heap {
      uint8_t* data;
      uint32_t capacity;
    };
    union {
      uint8_t inline_[kInlineBytes] = {};
      Heap heap_;  // on_heap()
    };
  };

  static void record(Track& track, int64_t value, size_t index);
  template <typename Map, typename Key>
  static void record(Map& tracks, const Key& key, int64_t value, size_t index);
  std::vector<SeriesPoint> points(const Track& track) const;
  template <typename Map, typename Key>
  std::vector<SeriesPoint> points(const Map& tracks, const Key& key) const;
  void sample(const RunState& state);
  void halve();

  size_t max_points_;
  uint64_t observed_ = 0;
  double spacing_s_ = 0;           // least time between two kept samples
  uint64_t last_sampled_ = ~0ull;  // observe() count at the last sample
  std::vector<double> times_;
  std::vector<ProcessSample> process_;
  ChunkedVector<Track> sites_;  // by site id: chunked, as there may be a few hundred thousand
  std::map<std::string, Track> tasks_;
  std::unordered_map<uint32_t, Track> threads_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_LIVE_SERIES_H_
