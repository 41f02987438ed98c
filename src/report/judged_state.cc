#include "report/judged_state.h"

#include <algorithm>
#include <unordered_map>

namespace leakscope::report {

std::vector<JudgedSite> live_sites(const RunState& state) {
  std::vector<JudgedSite> sites;
  for (SiteSummary& summary : summarize_live_sites(state)) {
    JudgedSite judged;
    const Site& site = state.sites()[summary.site];
    judged.first_seen_s = static_cast<double>(site.first_seen_ns) / 1e9;
    judged.taken_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
    judged.freed_bytes_by_lifetime = site.freed_bytes_by_lifetime.buckets();
    judged.summary = std::move(summary);
    sites.push_back(std::move(judged));
  }
  return sites;
}

void JudgedCapture::observe(const RunState& state) {
  uint32_t index = state.snapshot_count();
  if (done_ || index == 0) return;
  if (at_.earlier != 0 && index >= at_.earliest && index <= at_.earlier) {
    double epoch_start_s = static_cast<double>(state.epoch_start_ns(state.last_snapshot().epoch)) / 1e9;
    for (JudgedSite& site : live_sites(state)) {
      int64_t held = 0;
      for (const LiveByBirth& birth : site.summary.births) {
        if (birth.birth_s < epoch_start_s) held += birth.bytes;
      }
      EarlierSite& earlier = earlier_[site.summary.site];
      // Still shrinking: the run keeps its start. Otherwise a run may start here.
      if (earlier.seen_at == 0 || held >= earlier.latest_held) {
        earlier.run_start = site;
        earlier.run_start_held = held;
      }
      earlier.latest = std::move(site);
      earlier.latest_held = held;
      earlier.seen_at = index;
    }
    for (auto& [id, earlier] : earlier_) {
      if (earlier.seen_at != index) earlier.latest_held = 0;  // gone here: it shrank to nothing
    }
    return;
  }
  if (index != at_.index) return;
  done_ = true;
  info_ = state.last_snapshot();
  sites_ = live_sites(state);
  if (at_.earlier != 0) {
    std::unordered_map<uint32_t, size_t> now;
    for (size_t i = 0; i < sites_.size(); ++i) now.emplace(sites_[i].summary.site, i);
    for (auto& [id, before] : earlier_) {
      auto found = now.find(id);
      int64_t held_now = found != now.end() ? sites_[found->second].summary.live_bytes : 0;
      bool gone = held_now == 0;
      if (!gone && before.seen_at != at_.earlier) continue;
      JudgedSite& taken = gone ? before.run_start : before.latest;
      if ((gone ? before.run_start_held : before.latest_held) <= held_now) continue;
      taken.from_earlier = true;
      if (found != now.end()) {
        sites_[found->second] = std::move(taken);
      } else {
        sites_.push_back(std::move(taken));
      }
    }
    earlier_.clear();
    std::sort(sites_.begin(), sites_.end(), [](const JudgedSite& a, const JudgedSite& b) {
      return a.summary.live_bytes != b.summary.live_bytes ? a.summary.live_bytes > b.summary.live_bytes
                                                          : a.summary.site < b.summary.site;
    });
  }
  for (const JudgedSite& site : sites_) by_domain_[static_cast<size_t>(site.summary.domain)] += site.summary.live_bytes;
}

}  // namespace leakscope::report
