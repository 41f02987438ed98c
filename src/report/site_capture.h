// File: site_capture.h
//
// Sites as one snapshot had them, captured while a stream is read (report/judged_state.h says
// which snapshot each is taken from): per site a fixed record of ids and counters, and what varies
// in length (its threads and tasks, its live bytes by birth time, its freed bytes by lifetime) in
// one arena of words that the records point into, with each thread's and task's name held once. A
// process with hundreds of thousands of sites costs tens of bytes per site here; the whole
// SiteSummary, names and all, is built only for a site that is shown.
#ifndef LEAKSCOPE_REPORT_SITE_CAPTURE_H_
#define LEAKSCOPE_REPORT_SITE_CAPTURE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/run_state.h"
#include "report/site_summary.h"

namespace leakscope::report {

// CapturedSite: one site at one snapshot, in 64 bytes. Its details lie in the SiteCaptures that
// made it, from `details` on: its thread shares, then its task shares (3 words each: owner, bytes,
// blocks; none when `sole`), its births (2 words each: birth time, bytes), then, with `lifetimes`,
// its freed bytes by lifetime (kLifetimeBuckets words).
struct CapturedSite {
  uint32_t site = 0;  // id in the RunState
  // Its thread and task shares, largest first. With `sole`, one thread and one task hold all of its
  // bytes and blocks, as most sites have: these are then that thread's owner and that task's name
  // in the SiteCaptures, and the arena holds no shares.
  uint32_t threads = 0;
  uint32_t tasks = 0;
  uint32_t details = 0;  // offset in the arena, in words
  uint16_t births = 0;   // nonzero bins of live bytes by birth time, oldest first
  bool sole = false;
  bool lifetimes = false;     // something was freed: its lifetime buckets are in the arena
  bool from_earlier = false;  // taken from a snapshot before a teardown mark (judged_state.h)
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
  uint64_t allocations = 0;            // blocks allocated so far, freed or not
  uint64_t temporary_allocations = 0;  // blocks freed in the epoch they were born in
  double taken_s = 0;                  // the time of the snapshot it was taken from
};

// TriplesBySite: the triples of each site of a RunState, indexed once per snapshot that is
// captured (a site's triples are scattered over the ids).
class TriplesBySite {
 public:
  explicit TriplesBySite(const RunState& state);
  // live() tells whether any triple of `site` holds live bytes or blocks.
  bool live(uint32_t site) const;
  // live_bytes() is what the site's triples hold, as its summary counts it.
  int64_t live_bytes(uint32_t site) const;
  const uint32_t* begin(uint32_t site) const { return triples_.data() + first_[site]; }
  const uint32_t* end(uint32_t site) const { return triples_.data() + first_[site + 1]; }

 private:
  const RunState& state_;
  std::vector<uint32_t> first_;    // by site id, and one past the last
  std::vector<uint32_t> triples_;  // triple ids, site by site
};

class SiteCaptures {
 public:
  // capture() takes site `site` of `state` as it is now (`index` built on it), at time `taken_s`.
  // With `into`, a record already here, its details are overwritten where they fit.
  CapturedSite capture(const RunState& state, const TriplesBySite& index, uint32_t site, double taken_s,
                       const CapturedSite* into = nullptr);

  // copy() is `site`, a record of `from`, with its details copied here.
  CapturedSite copy(const SiteCaptures& from, const CapturedSite& site);

  // release() says that `site`'s details are no longer pointed to; compact() then moves the details
  // of `kept` (every record still in use) together, in place, when the released ones are most of
  // the arena or `always`.
  void release(const CapturedSite& site);
  void compact(const std::vector<CapturedSite*>& kept, bool always = false);

  // summary() is the whole SiteSummary of `site`, with the names of its threads and tasks.
  SiteSummary summary(const RunState& state, const CapturedSite& site) const;
  std::vector<LiveByBirth> births(const CapturedSite& site) const;
  LifetimeHistogram::Buckets lifetimes(const CapturedSite& site) const;
  // for_each_thread() calls visit(thread index, bytes, blocks) per thread share, largest first;
  // for_each_task() calls visit(task name, bytes, blocks) per task share ("" = no task).
  template <typename Visit>
  void for_each_thread(const CapturedSite& site, Visit&& visit) const;
  template <typename Visit>
  void for_each_task(const CapturedSite& site, Visit&& visit) const;

 private:
  struct ThreadOwner {
    uint32_t thread = 0;  // index into RunState::threads()
    int64_t tid = 0;
    std::string name;  // as it was when captured: a thread may be renamed later
  };
  uint32_t thread_owner(const RunState& state, uint32_t thread);
  uint32_t task_name(const RunState& state, uint32_t task);
  static size_t detail_words(const CapturedSite& site);
  // append_words() makes room for `words` more at the arena's end and returns where they begin.
  uint32_t append_words(size_t words);

  std::vector<uint64_t> words_;
  size_t released_words_ = 0;
  std::vector<ThreadOwner> owners_;
  std::unordered_map<std::string, uint32_t> owner_ids_;  // by thread index, tid and name
  std::vector<std::string> task_names_;
  std::unordered_map<std::string, uint32_t> task_ids_;
  // The owner and task name each thread and task of the RunState had when last captured, so that
  // names are looked up once, not once per site (UINT32_MAX: not yet; checked against the name now).
  std::vector<uint32_t> owner_of_thread_;
  std::vector<uint32_t> name_of_task_;
};

template <typename Visit>
void SiteCaptures::for_each_thread(const CapturedSite& site, Visit&& visit) const {
  if (site.sole) {
    visit(owners_[site.threads].thread, site.live_bytes, site.live_blocks);
    return;
  }
  const uint64_t* word = words_.data() + site.details;
  for (uint32_t i = 0; i < site.threads; ++i, word += 3) {
    visit(owners_[word[0]].thread, static_cast<int64_t>(word[1]), static_cast<int64_t>(word[2]));
  }
}

template <typename Visit>
void SiteCaptures::for_each_task(const CapturedSite& site, Visit&& visit) const {
  if (site.sole) {
    visit(task_names_[site.tasks], site.live_bytes, site.live_blocks);
    return;
  }
  const uint64_t* word = words_.data() + site.details + 3 * site.threads;
  for (uint32_t i = 0; i < site.tasks; ++i, word += 3) {
    visit(task_names_[word[0]], static_cast<int64_t>(word[1]), static_cast<int64_t>(word[2]));
  }
}

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SITE_CAPTURE_H_
