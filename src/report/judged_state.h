// File: judged_state.h
//
// The sites live at the judged snapshot (report/snapshot_choice.h), captured while a stream is
// read, for dump and the analysis alike. At a mark of main's return, main's own locals (a Server
// object, a vector of loaded models) are destroyed already, and a snapshot taken in the second
// before may have landed while they were being destroyed. A site is then taken whole (bytes,
// blocks, owners, births) from an earlier snapshot when what it held there from before that
// snapshot's epoch is more than it holds at the mark: a site gone at the mark (a local torn down)
// from the snapshot of that second where it last began to shrink steadily into the mark, any
// other from the snapshot just before the mark (a pool that drains as the program works keeps its
// last state). Otherwise it is taken from the mark. Neither hides a leak, and blocks that were
// merely in flight at an earlier snapshot (a loop's temporaries) are not revived.
#ifndef LEAKSCOPE_REPORT_JUDGED_STATE_H_
#define LEAKSCOPE_REPORT_JUDGED_STATE_H_

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "report/run_state.h"
#include "report/site_summary.h"
#include "report/snapshot_choice.h"

namespace leakscope::report {

struct JudgedSite {
  SiteSummary summary;
  double first_seen_s = 0;
  std::array<uint64_t, internal::kLifetimeBuckets> freed_bytes_by_lifetime{};
  bool from_earlier = false;  // taken from a snapshot before a main-return mark
  double taken_s = 0;         // the time of the snapshot it was taken from
};

// live_sites() is every site live in `state` now, as a JudgedSite taken there, largest first.
std::vector<JudgedSite> live_sites(const RunState& state);

class JudgedCapture {
 public:
  explicit JudgedCapture(const ChosenSnapshot& at) : at_(at) {}

  // observe() is called after each snapshot is applied to `state`.
  void observe(const RunState& state);

  // Once the chosen snapshot has been observed:
  bool done() const { return done_; }
  const SnapshotInfo& info() const { return info_; }  // INFO of the chosen snapshot
  uint32_t epochs() const { return at_.index; }
  // The judged sites, largest live bytes first (ties by site id); taken once.
  std::vector<JudgedSite> take_sites() { return std::move(sites_); }
  // What the chosen snapshot says of each device's memory.
  const std::vector<DeviceMemory>& devices() const { return devices_; }
  // Live bytes per domain of the judged sites.
  const std::array<int64_t, internal::kDomainCount>& live_bytes_by_domain() const { return by_domain_; }

 private:
  ChosenSnapshot at_;
  bool done_ = false;
  // A site in the snapshots before a main-return mark: as it was where it last began to shrink
  // steadily, and in the latest snapshot that had it, with what it held in each from before that
  // snapshot's epoch (births after were in flight).
  struct EarlierSite {
    JudgedSite run_start;
    int64_t run_start_held = 0;
    JudgedSite latest;
    int64_t latest_held = 0;
    uint32_t seen_at = 0;  // the latest snapshot that had it
  };

  SnapshotInfo info_;
  std::unordered_map<uint32_t, EarlierSite> earlier_;
  std::vector<JudgedSite> sites_;
  std::array<int64_t, internal::kDomainCount> by_domain_{};
  std::vector<DeviceMemory> devices_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_JUDGED_STATE_H_
