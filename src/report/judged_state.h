// File: judged_state.h
//
// The sites live at the judged snapshot (report/snapshot_choice.h), captured while a stream is
// read, for dump and the analysis alike. At a teardown mark the program may have torn down
// already: at main's return its own locals (a Server object, a vector of loaded models) are
// destroyed, and before exit() or an interpreter's finalization a service shuts its workers down
// and clears what it kept (atexit handlers too), for as long as its drain takes; the snapshots of
// that shutdown (snapshot_choice.h) may have landed while it did. A site is then taken whole (bytes,
// blocks, owners, births) from an earlier snapshot when what it held there from before that
// snapshot's epoch is more than it holds at the mark: from the snapshot of the shutdown where it
// last began to shrink steadily into the mark, whether it is gone at the mark (a local torn down)
// or keeps a few blocks there (a log whose objects the interpreter keeps on its free lists).
// Otherwise it is taken from the mark. That hides no leak, and blocks that were merely in flight
// at an earlier snapshot (a loop's temporaries) are not revived. Before exit() or
// finalization only a site that grew all along is taken from before (at least 4 KiB held there, a
// quarter of it born in the first half of its life, or, for blocks re-allocated ever larger, which
// are born anew at each growth, at least half as much again as it held midway to the shutdown):
// the locals of functions that returned, a request loop's cache among them, are gone as they would
// be at any other moment; and not one that the interpreter's last collection, just before the mark,
// freed of half or more of what it held: reference cycles grow all along as garbage until a full
// collection reaches them (snapshot_choice.h). Captures of the shutdown's snapshots are kept only
// where a site's run may start (report/site_capture.h), so memory stays one capture per site and
// not one per snapshot.
#ifndef LEAKSCOPE_REPORT_JUDGED_STATE_H_
#define LEAKSCOPE_REPORT_JUDGED_STATE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "report/chunked_vector.h"
#include "report/run_state.h"
#include "report/site_capture.h"
#include "report/snapshot_choice.h"

namespace leakscope::report {

// The sites judged: their records, largest live bytes first (ties by site id), and the captures
// that hold their details.
struct JudgedSites {
  SiteCaptures captures;
  std::vector<CapturedSite> sites;
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
  // The judged sites; taken once.
  JudgedSites take_sites() { return std::move(judged_); }
  // What the chosen snapshot says of each device's memory.
  const std::vector<DeviceMemory>& devices() const { return devices_; }
  // The c10_cuda bytes inside each cuda site's blocks at the chosen snapshot (RunState::inner_bytes()).
  const std::unordered_map<uint32_t, int64_t>& inner_bytes_by_site() const { return inner_bytes_; }
  // Live bytes per domain of the judged sites.
  const std::array<int64_t, internal::kDomainCount>& live_bytes_by_domain() const { return by_domain_; }

 private:
  void observe_midway(const RunState& state);
  void observe_before_collection(const RunState& state);
  void observe_earlier(const RunState& state, uint32_t index);
  void judge(const RunState& state);

  static constexpr uint32_t kNone = UINT32_MAX;
  // A site in the snapshots before a teardown mark: where it last began to shrink steadily and,
  // when it was in the snapshot just before the mark, as it was there (records in earlier_sites_),
  // with what it held in each from before that snapshot's epoch (births after were in flight).
  struct EarlierSite {
    uint32_t run_start = kNone;  // in earlier_sites_: where it last began to shrink steadily
    int64_t run_start_held = 0;
    int64_t latest_held = 0;  // at the latest snapshot of the shutdown
    // It held at least 4 KiB at its run's start, a quarter of it born in the first half of its
    // life so far or half as much again as it held midway.
    bool run_start_grew_all_along = false;
    uint32_t seen_at = 0;  // the latest snapshot that had it
  };

  ChosenSnapshot at_;
  bool done_ = false;
  SnapshotInfo info_;
  // Chunked: there may be a few hundred thousand of each, grown snapshot by snapshot.
  ChunkedVector<EarlierSite> earlier_;         // by site id
  ChunkedVector<int64_t> midway_bytes_;        // by site id: live bytes at the snapshot midway to the shutdown
  ChunkedVector<int64_t> before_collection_bytes_;  // by site id: live bytes before the last garbage collection
  ChunkedVector<CapturedSite> earlier_sites_;  // their details in judged_.captures
  JudgedSites judged_;
  std::array<int64_t, internal::kDomainCount> by_domain_{};
  std::vector<DeviceMemory> devices_;
  std::unordered_map<uint32_t, int64_t> inner_bytes_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_JUDGED_STATE_H_
