#include "report/site_series.h"

namespace leakscope::report {

void SiteSeries::observe(const RunState& state) {
  if (observed_ % stride_ == 0) sample(state);
  ++observed_;
}

void SiteSeries::finish(const RunState& state) {
  if (observed_ == 0 || last_sampled_ == observed_ - 1) return;
  sample(state);
}

void SiteSeries::sample(const RunState& state) {
  const SnapshotInfo& snapshot = state.last_snapshot();
  ProcessSample point;
  point.time_s = static_cast<double>(snapshot.time_ns) / 1e9;
  point.rss_bytes = snapshot.rss_bytes;
  point.pss_bytes = snapshot.pss_bytes;
  point.anon_bytes = snapshot.anon_bytes;
  point.file_bytes = snapshot.file_bytes;
  size_t index = times_.size();
  const auto& sites = state.sites();
  for (size_t id = 1; id < sites.size(); ++id) {
    const Site& site = sites[id];
    if (!site.known) continue;
    point.tracked_bytes[static_cast<size_t>(site.domain)] += site.live_bytes;
    auto found = tracks_.find(static_cast<uint32_t>(id));
    if (found == tracks_.end()) {
      if (site.live_bytes == 0) continue;
      found = tracks_.emplace(static_cast<uint32_t>(id), Track{index, {}}).first;
    }
    found->second.values.push_back(site.live_bytes);
  }
  times_.push_back(point.time_s);
  process_.push_back(point);
  last_sampled_ = observed_;
  if (times_.size() > max_points_) halve();
}

// halve() keeps the samples at even indices: every series stays aligned with times_.
void SiteSeries::halve() {
  size_t kept = 0;
  for (size_t i = 0; i < times_.size(); i += 2, ++kept) {
    times_[kept] = times_[i];
    process_[kept] = process_[i];
  }
  times_.resize(kept);
  process_.resize(kept);
  for (auto& [id, track] : tracks_) {
    std::vector<int64_t> values;
    for (size_t i = 0; i < track.values.size(); ++i) {
      if ((track.first + i) % 2 == 0) values.push_back(track.values[i]);
    }
    track.first = (track.first + 1) / 2;
    track.values = std::move(values);
  }
  stride_ *= 2;
}

std::vector<SeriesPoint> SiteSeries::site(uint32_t site) const {
  std::vector<SeriesPoint> points;
  auto found = tracks_.find(site);
  if (found == tracks_.end()) return points;
  const Track& track = found->second;
  for (size_t i = 0; i < track.values.size(); ++i) {
    points.push_back({times_[track.first + i], static_cast<double>(track.values[i])});
  }
  return points;
}

}  // namespace leakscope::report
