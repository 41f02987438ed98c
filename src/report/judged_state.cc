#include "report/judged_state.h"

#include <algorithm>

namespace leakscope::report {
namespace {

// Before exit() or finalization a site is taken from before the mark only when it held at least
// this much there: a thread descheduled between making a temporary and letting it go (a loaded
// machine, a short run whose shutdown is most of it) leaves a few old objects that
// the mark no longer holds, and they are no store the program cleared.
constexpr int64_t kLeastGrownBytes = 4096;

}  // namespace

void JudgedCapture::observe(const RunState& state) {
  uint32_t index = state.snapshot_count();
  if (done_ || index == 0) return;
  if (index == at_.midway && index < at_.earliest) observe_midway(state);
  if (index == at_.collection && at_.shutdown != 0) observe_before_collection(state);
  if (at_.earlier != 0 && index >= at_.earliest && index <= at_.earlier) {
    observe_earlier(state, index);
    return;
  }
  if (index != at_.index) return;
  done_ = true;
  info_ = state.last_snapshot();
  devices_ = state.devices();
  inner_bytes_ = state.inner_bytes_by_site();
  judge(state);
}

void JudgedCapture::observe_midway(const RunState& state) {
  TriplesBySite triples(state);
  midway_bytes_.grow(state.sites().size());
  for (uint32_t id = 1; id < state.sites().size(); ++id) {
    if (triples.live(id)) midway_bytes_[id] = triples.live_bytes(id);
  }
}

void JudgedCapture::observe_before_collection(const RunState& state) {
  TriplesBySite triples(state);
  before_collection_bytes_.grow(state.sites().size());
  for (uint32_t id = 1; id < state.sites().size(); ++id) {
    if (triples.live(id)) before_collection_bytes_[id] = triples.live_bytes(id);
  }
}

void JudgedCapture::observe_earlier(const RunState& state, uint32_t index) {
  double epoch_start_s = static_cast<double>(state.epoch_start_ns(state.last_snapshot().epoch)) / 1e9;
  double taken_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  double bin_s = static_cast<double>(state.birth_bin_ns()) / 1e9;
  SiteCaptures& captures = judged_.captures;
  TriplesBySite triples(state);
  earlier_.grow(state.sites().size());
  for (uint32_t id = 1; id < state.sites().size(); ++id) {
    if (!triples.live(id)) continue;
    int64_t held = 0, held_early = 0;
    // The first half of the site's life so far: what a store that grew all along (a log cleared
    // at shutdown) holds much of, and a cache whose entries turn over holds none of.
    double first_half_s = (static_cast<double>(state.sites()[id].first_seen_ns) / 1e9 + taken_s) / 2;
    for (const BirthBin& bin : state.sites()[id].births) {
      double born_s = static_cast<double>(bin.bin) * bin_s;
      if (bin.bytes != 0 && born_s < epoch_start_s) held += bin.bytes;
      if (bin.bytes != 0 && born_s < first_half_s) held_early += bin.bytes;
    }
    bool grew_all_along = held >= kLeastGrownBytes && held_early * 4 >= held;
    // A block re-allocated ever larger (a growing bytearray or vector) is born anew at each
    // growth, perhaps in this very epoch: it grew all along when it holds half as much again as
    // midway, and it is held whole, not in flight.
    int64_t midway = id < midway_bytes_.size() ? midway_bytes_[id] : 0;
    int64_t live = triples.live_bytes(id);
    if (!grew_all_along && midway > 0 && live >= kLeastGrownBytes && 2 * live >= 3 * midway) {
      grew_all_along = true;
      held = live;
    }
    EarlierSite& earlier = earlier_[id];
    // Still shrinking: the run keeps its start. Otherwise a run may start here.
    bool run_starts = earlier.seen_at == 0 || held >= earlier.latest_held;
    if (run_starts) {
      if (earlier.run_start == kNone) {
        earlier.run_start = static_cast<uint32_t>(earlier_sites_.size());
        earlier_sites_.push_back(captures.capture(state, triples, id, taken_s));
      } else {
        CapturedSite& record = earlier_sites_[earlier.run_start];
        record = captures.capture(state, triples, id, taken_s, &record);
      }
      earlier.run_start_held = held;
      earlier.run_start_grew_all_along = grew_all_along;
    }
    earlier.latest_held = held;
    earlier.seen_at = index;
  }
  for (size_t id = 0; id < earlier_.size(); ++id) {
    if (earlier_[id].seen_at != index) earlier_[id].latest_held = 0;  // gone here: it shrank to nothing
  }
  std::vector<CapturedSite*> kept;
  kept.reserve(earlier_sites_.size());
  for (size_t i = 0; i < earlier_sites_.size(); ++i) kept.push_back(&earlier_sites_[i]);
  captures.compact(kept);
}

void JudgedCapture::judge(const RunState& state) {
  double taken_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  SiteCaptures& captures = judged_.captures;
  std::vector<CapturedSite>& sites = judged_.sites;
  TriplesBySite triples(state);
  // What the shutdown before a teardown mark gives, decided first, so that the captures not taken
  // are let go before the mark's own are made.
  std::vector<bool> taken_earlier(state.sites().size(), false);
  for (uint32_t id = 1; id < earlier_.size(); ++id) {
    const EarlierSite& before = earlier_[id];
    if (before.seen_at == 0) continue;
    int64_t held_now = triples.live(id) ? triples.live_bytes(id) : 0;
    // Drained by the shutdown, wholly (a local torn down) or but for a few blocks (a log whose
    // objects the interpreter keeps on its free lists): taken from where it began to shrink.
    if (before.run_start_held <= held_now) continue;
    // Before exit() or an interpreter's finalization the program's own functions have returned,
    // their locals with them (a request loop's bounded cache): only what grew all along is taken
    // from before (the log a service cleared as it shut down). At main's return, everything is.
    if (!at_.main_returned && !before.run_start_grew_all_along) continue;
    // What the interpreter's last collection freed, half or more of what the site held before it,
    // was garbage, reference cycles the collector had not reached yet: it grew all along as garbage
    // does until a full collection, and is judged at the mark.
    int64_t before_collection = id < before_collection_bytes_.size() ? before_collection_bytes_[id] : 0;
    if (before_collection > 0 && 2 * held_now <= before_collection) continue;
    CapturedSite taken = earlier_sites_[before.run_start];
    taken.from_earlier = true;
    sites.push_back(taken);
    taken_earlier[id] = true;
  }
  earlier_ = {};
  earlier_sites_ = {};
  midway_bytes_ = {};
  before_collection_bytes_ = {};
  std::vector<CapturedSite*> kept;
  for (CapturedSite& site : sites) kept.push_back(&site);
  captures.compact(kept, true);
  std::vector<uint32_t> live_now;
  for (uint32_t id = 1; id < state.sites().size(); ++id) {
    if (!taken_earlier[id] && triples.live(id)) live_now.push_back(id);
  }
  sites.reserve(sites.size() + live_now.size());  // no vector of a few hundred thousand records grown by doubling
  for (uint32_t id : live_now) sites.push_back(captures.capture(state, triples, id, taken_s));
  std::sort(sites.begin(), sites.end(), [](const CapturedSite& a, const CapturedSite& b) {
    return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.site < b.site;
  });
  for (const CapturedSite& site : sites) by_domain_[static_cast<size_t>(state.sites()[site.site].domain)] += site.live_bytes;
}

}  // namespace leakscope::report
