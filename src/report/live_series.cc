#include "report/live_series.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/stream_format.h"

namespace leakscope::report {

void LiveSeries::Track::append(int64_t value) {
  uint8_t delta[internal::kMaxVarintSize];
  uint32_t length = static_cast<uint32_t>(internal::varint_put(delta, internal::zigzag_encode(value - last_)) - delta);
  uint32_t size = size_ + length;
  if (size <= kInlineBytes) {
    std::memcpy(inline_ + size_, delta, length);
  } else {
    if (!on_heap() || size > heap_.capacity) {
      uint32_t capacity = std::max(2 * size, 4 * kInlineBytes);
      uint8_t* data = new uint8_t[capacity];
      std::memcpy(data, bytes(), size_);
      if (on_heap()) delete[] heap_.data;
      heap_ = Heap{data, capacity};
    }
    std::memcpy(heap_.data + size_, delta, length);
  }
  size_ = size;
  last_ = value;
}

void LiveSeries::Track::clear() {
  if (on_heap()) delete[] heap_.data;
  size_ = 0;
  last_ = 0;
  first_ = 0;
}

std::vector<int64_t> LiveSeries::Track::values() const {
  std::vector<int64_t> values;
  const uint8_t* cursor = bytes();
  const uint8_t* end = cursor + size_;
  int64_t value = 0;
  uint64_t delta = 0;
  while (internal::varint_get(&cursor, end, &delta)) {
    value += internal::zigzag_decode(delta);
    values.push_back(value);
  }
  return values;
}

void LiveSeries::observe(const RunState& state) {
  double time_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  if (times_.empty() || time_s >= times_.back() + spacing_s_) sample(state);
  ++observed_;
}

void LiveSeries::finish(const RunState& state) {
  if (observed_ == 0 || last_sampled_ == observed_ - 1) return;
  sample(state);
}

// record() appends this sample's value to a track, starting it for a key first seen live.
void LiveSeries::record(Track& track, int64_t value, size_t index) {
  if (!track.tracked()) {
    if (value == 0) return;
    track.begin_at(static_cast<uint32_t>(index));
  }
  track.append(value);
}

template <typename Map, typename Key>
void LiveSeries::record(Map& tracks, const Key& key, int64_t value, size_t index) {
  auto found = tracks.find(key);
  if (found == tracks.end()) {
    if (value == 0) return;
    found = tracks.try_emplace(key).first;
  }
  record(found->second, value, index);
}

std::vector<SeriesPoint> LiveSeries::points(const Track& track) const {
  std::vector<SeriesPoint> result;
  std::vector<int64_t> values = track.values();
  for (size_t i = 0; i < values.size(); ++i) result.push_back({times_[track.first() + i], static_cast<double>(values[i])});
  return result;
}

template <typename Map, typename Key>
std::vector<SeriesPoint> LiveSeries::points(const Map& tracks, const Key& key) const {
  auto found = tracks.find(key);
  return found == tracks.end() ? std::vector<SeriesPoint>() : points(found->second);
}

void LiveSeries::sample(const RunState& state) {
  const SnapshotInfo& snapshot = state.last_snapshot();
  ProcessSample point;
  point.time_s = static_cast<double>(snapshot.time_ns) / 1e9;
  point.rss_bytes = snapshot.rss_bytes;
  point.pss_bytes = snapshot.pss_bytes;
  point.anon_bytes = snapshot.anon_bytes;
  point.file_bytes = snapshot.file_bytes;
  point.overhead_bytes = snapshot.overhead_bytes;
  size_t index = times_.size();
  const auto& sites = state.sites();
  sites_.grow(sites.size());
  point.tracked_bytes = state.live_bytes_by_domain();  // the whole process's, in a read that keeps some sites
  for (size_t id = 1; id < sites.size(); ++id) {
    if (sites[id].known) record(sites_[id], sites[id].live_bytes, index);
  }
  std::map<std::string, int64_t> by_task;
  std::unordered_map<uint32_t, int64_t> by_thread;
  const auto& triples = state.triples();
  for (size_t id = 1; id < triples.size(); ++id) {
    if (!triples[id].known) continue;
    const Triple& triple = triples[id];
    // A caching allocator's segments hold the tensors counted at their own sites: never both.
    if (state.held_inner_blocks(triple.site)) continue;
    by_task[triple.task != 0 ? state.tasks()[triple.task].name : std::string()] += triple.live_bytes();
    state.for_each_thread_part(triple, [&](const ThreadPart& part) { by_thread[part.thread] += part.live_bytes; });
  }
  // Keys already tracked get a value at every sample, 0 when nothing of them is live now.
  for (auto& [name, track] : tasks_) by_task.emplace(name, 0);
  for (auto& [thread, track] : threads_) by_thread.emplace(thread, 0);
  for (const auto& [name, bytes] : by_task) record(tasks_, name, bytes, index);
  for (const auto& [thread, bytes] : by_thread) record(threads_, thread, bytes, index);
  times_.push_back(point.time_s);
  process_.push_back(point);
  last_sampled_ = observed_;
  if (times_.size() > max_points_) halve();
}

// halve() doubles the spacing (or sets it, the first time, to what keeps half the bound of evenly
// spread samples) and keeps the samples that are at least that far apart, the first and the last always; every
// track keeps the same samples, so all stay aligned with times_.
void LiveSeries::halve() {
  double span = times_.back() - times_.front();
  spacing_s_ = spacing_s_ > 0 ? 2 * spacing_s_ : 2 * span / static_cast<double>(max_points_);
  std::vector<size_t> keep;  // old indices, in order
  for (size_t i = 0; i < times_.size(); ++i) {
    if (keep.empty() || times_[i] >= times_[keep.back()] + spacing_s_) keep.push_back(i);
  }
  size_t last = times_.size() - 1;
  if (keep.back() != last) {
    if (keep.size() > 1 && times_[last] < times_[keep.back()] + spacing_s_) keep.back() = last;  // replaces its neighbour
    else keep.push_back(last);
  }
  std::vector<size_t> kept_at(times_.size(), SIZE_MAX);  // old index -> new index
  for (size_t to = 0; to < keep.size(); ++to) {
    kept_at[keep[to]] = to;
    times_[to] = times_[keep[to]];
    process_[to] = process_[keep[to]];
  }
  size_t kept = keep.size();
  times_.resize(kept);
  process_.resize(kept);
  auto thin_track = [&kept_at](Track& track) {
    if (!track.tracked()) return;
    std::vector<int64_t> values = track.values();
    size_t first = track.first();
    track.clear();
    for (size_t i = 0; i < values.size(); ++i) {
      size_t to = kept_at[first + i];
      if (to == SIZE_MAX) continue;
      if (!track.tracked()) track.begin_at(static_cast<uint32_t>(to));
      track.append(values[i]);
    }
  };
  for (size_t id = 0; id < sites_.size(); ++id) thin_track(sites_[id]);
  for (auto& [name, track] : tasks_) thin_track(track);
  for (auto& [thread, track] : threads_) thin_track(track);
}

std::vector<SeriesPoint> LiveSeries::site(uint32_t site) const {
  return site < sites_.size() ? points(sites_[site]) : std::vector<SeriesPoint>();
}
std::vector<SeriesPoint> LiveSeries::task(const std::string& name) const { return points(tasks_, name); }
std::vector<SeriesPoint> LiveSeries::thread(uint32_t thread) const { return points(threads_, thread); }

std::vector<std::string> LiveSeries::task_names() const {
  std::vector<std::string> names;
  for (const auto& [name, track] : tasks_) names.push_back(name);
  return names;
}

std::vector<uint32_t> LiveSeries::thread_indexes() const {
  std::vector<uint32_t> indexes;
  for (const auto& [thread, track] : threads_) indexes.push_back(thread);
  return indexes;
}

}  // namespace leakscope::report
