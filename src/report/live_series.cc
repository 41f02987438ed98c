#include "report/live_series.h"

namespace leakscope::report {

void LiveSeries::observe(const RunState& state) {
  if (observed_ % stride_ == 0) sample(state);
  ++observed_;
}

void LiveSeries::finish(const RunState& state) {
  if (observed_ == 0 || last_sampled_ == observed_ - 1) return;
  sample(state);
}

// record() appends this sample's value to the key's track, starting one for a key first seen live.
template <typename Map, typename Key>
void LiveSeries::record(Map& tracks, const Key& key, int64_t value, size_t index) {
  auto found = tracks.find(key);
  if (found == tracks.end()) {
    if (value == 0) return;
    found = tracks.emplace(key, Track{index, {}}).first;
  }
  found->second.values.push_back(value);
}

template <typename Map, typename Key>
std::vector<SeriesPoint> LiveSeries::points(const Map& tracks, const Key& key) const {
  std::vector<SeriesPoint> result;
  auto found = tracks.find(key);
  if (found == tracks.end()) return result;
  const Track& track = found->second;
  for (size_t i = 0; i < track.values.size(); ++i) {
    result.push_back({times_[track.first + i], static_cast<double>(track.values[i])});
  }
  return result;
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
  for (size_t id = 1; id < sites.size(); ++id) {
    if (!sites[id].known) continue;
    point.tracked_bytes[static_cast<size_t>(sites[id].domain)] += sites[id].live_bytes;
    record(sites_, static_cast<uint32_t>(id), sites[id].live_bytes, index);
  }
  std::map<std::string, int64_t> by_task;
  std::unordered_map<uint32_t, int64_t> by_thread;
  const auto& triples = state.triples();
  for (size_t id = 1; id < triples.size(); ++id) {
    if (!triples[id].known) continue;
    const Triple& triple = triples[id];
    by_task[triple.task != 0 ? state.tasks()[triple.task].name : std::string()] += triple.live_bytes();
    by_thread[triple.thread] += triple.live_bytes();
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

// halve() keeps the samples at even indices: every track stays aligned with times_.
void LiveSeries::halve() {
  size_t kept = 0;
  for (size_t i = 0; i < times_.size(); i += 2, ++kept) {
    times_[kept] = times_[i];
    process_[kept] = process_[i];
  }
  times_.resize(kept);
  process_.resize(kept);
  auto halve_track = [](Track& track) {
    std::vector<int64_t> values;
    for (size_t i = 0; i < track.values.size(); ++i) {
      if ((track.first + i) % 2 == 0) values.push_back(track.values[i]);
    }
    track.first = (track.first + 1) / 2;
    track.values = std::move(values);
  };
  for (auto& [id, track] : sites_) halve_track(track);
  for (auto& [name, track] : tasks_) halve_track(track);
  for (auto& [thread, track] : threads_) halve_track(track);
  stride_ *= 2;
}

std::vector<SeriesPoint> LiveSeries::site(uint32_t site) const { return points(sites_, site); }
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
