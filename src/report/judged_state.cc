#include "report/judged_state.h"

#include <algorithm>
#include <unordered_map>

namespace leakscope::report {

std::vector<JudgedSite> JudgedCapture::capture(const RunState& state) const {
  std::vector<JudgedSite> sites;
  for (SiteSummary& summary : summarize_live_sites(state)) {
    JudgedSite judged;
    const Site& site = state.sites()[summary.site];
    judged.first_seen_s = static_cast<double>(site.first_seen_ns) / 1e9;
    judged.freed_bytes_by_lifetime = site.freed_bytes_by_lifetime;
    judged.summary = std::move(summary);
    sites.push_back(std::move(judged));
  }
  return sites;
}

void JudgedCapture::observe(const RunState& state) {
  uint32_t index = state.snapshot_count();
  if (done_ || (index != at_.index && index != at_.earlier) || index == 0) return;
  if (index == at_.earlier) {
    earlier_ = capture(state);
    earlier_epoch_start_s_ = static_cast<double>(state.epoch_start_ns(state.last_snapshot().epoch)) / 1e9;
    return;
  }
  done_ = true;
  info_ = state.last_snapshot();
  sites_ = capture(state);
  if (at_.earlier != 0) {
    std::unordered_map<uint32_t, size_t> now;
    for (size_t i = 0; i < sites_.size(); ++i) now.emplace(sites_[i].summary.site, i);
    for (JudgedSite& before : earlier_) {
      int64_t held_before = 0;  // what the site held then that was born before that epoch
      for (const LiveByBirth& birth : before.summary.births) {
        if (birth.birth_s < earlier_epoch_start_s_) held_before += birth.bytes;
      }
      auto found = now.find(before.summary.site);
      int64_t held_now = found != now.end() ? sites_[found->second].summary.live_bytes : 0;
      if (held_before <= held_now) continue;
      before.from_earlier = true;
      if (found != now.end()) {
        sites_[found->second] = std::move(before);
      } else {
        sites_.push_back(std::move(before));
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
