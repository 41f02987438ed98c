// File: judged_state.h
//
// The sites live at the judged snapshot (report/snapshot_choice.h), captured while a stream is
// read, for dump and the analysis alike. At a mark of main's return, main's own locals (a Server
// object, a vector of loaded models) are destroyed already, while what the run allocated since the
// snapshot before is not yet in that one. A site is then taken whole (bytes, blocks, owners,
// births) from the snapshot before when what it held there from before that snapshot's epoch is
// more than it holds at the mark, and from the mark otherwise: neither hides a leak, and blocks
// that were merely in flight at the earlier snapshot (a loop's temporaries) are not revived.
#ifndef LEAKSCOPE_REPORT_JUDGED_STATE_H_
#define LEAKSCOPE_REPORT_JUDGED_STATE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "report/run_state.h"
#include "report/site_summary.h"
#include "report/snapshot_choice.h"

namespace leakscope::report {

struct JudgedSite {
  SiteSummary summary;
  double first_seen_s = 0;
  std::array<uint64_t, internal::kLifetimeBuckets> freed_bytes_by_lifetime{};
  bool from_earlier = false;  // taken from the snapshot before a main-return mark
};

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
  // Live bytes per domain of the judged sites.
  const std::array<int64_t, internal::kDomainCount>& live_bytes_by_domain() const { return by_domain_; }

 private:
  std::vector<JudgedSite> capture(const RunState& state) const;

  ChosenSnapshot at_;
  bool done_ = false;
  double earlier_epoch_start_s_ = 0;  // births at or after it were in flight at the earlier snapshot
  SnapshotInfo info_;
  std::vector<JudgedSite> earlier_;
  std::vector<JudgedSite> sites_;
  std::array<int64_t, internal::kDomainCount> by_domain_{};
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_JUDGED_STATE_H_
