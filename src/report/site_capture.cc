#include "report/site_capture.h"

#include <algorithm>
#include <bit>
#include <new>

#include <fmt/format.h>

namespace leakscope::report {

TriplesBySite::TriplesBySite(const RunState& state) : state_(state), first_(state.sites().size() + 1, 0) {
  const ChunkedVector<Triple>& triples = state.triples();
  for (size_t id = 1; id < triples.size(); ++id) {
    if (triples[id].known) ++first_[triples[id].site + 1];
  }
  for (size_t site = 1; site < first_.size(); ++site) first_[site] += first_[site - 1];
  triples_.resize(first_.back());
  std::vector<uint32_t> next(first_.begin(), first_.end() - 1);
  for (size_t id = 1; id < triples.size(); ++id) {
    if (triples[id].known) triples_[next[triples[id].site]++] = static_cast<uint32_t>(id);
  }
}

bool TriplesBySite::live(uint32_t site) const {
  const ChunkedVector<Triple>& triples = state_.triples();
  return std::any_of(begin(site), end(site), [&](uint32_t id) {
    return triples[id].live_bytes() != 0 || triples[id].live_blocks() != 0;
  });
}

int64_t TriplesBySite::live_bytes(uint32_t site) const {
  int64_t bytes = 0;
  for (const uint32_t* id = begin(site); id != end(site); ++id) bytes += state_.triples()[*id].live_bytes();
  return bytes;
}

uint32_t SiteCaptures::thread_owner(const RunState& state, uint32_t thread) {
  const Thread& now = state.threads()[thread];
  if (thread >= owner_of_thread_.size()) owner_of_thread_.resize(state.threads().size(), UINT32_MAX);
  uint32_t& cached = owner_of_thread_[thread];
  if (cached != UINT32_MAX && owners_[cached].tid == now.tid && owners_[cached].name == now.name) return cached;
  auto [found, added] = owner_ids_.emplace(fmt::format("{}|{}|{}", thread, now.tid, now.name), static_cast<uint32_t>(owners_.size()));
  if (added) owners_.push_back({thread, now.tid, now.name});
  return cached = found->second;
}

uint32_t SiteCaptures::task_name(const RunState& state, uint32_t task) {
  const std::string& now = task != 0 ? state.tasks()[task].name : std::string();
  if (task >= name_of_task_.size()) name_of_task_.resize(state.tasks().size(), UINT32_MAX);
  uint32_t& cached = name_of_task_[task];
  if (cached != UINT32_MAX && task_names_[cached] == now) return cached;
  auto [found, added] = task_ids_.emplace(now, static_cast<uint32_t>(task_names_.size()));
  if (added) task_names_.push_back(now);
  return cached = found->second;
}

uint32_t SiteCaptures::append_words(size_t words) {
  // Offsets are 32-bit: an arena past 2^32 words (32 GiB) is past the machine's memory anyway.
  if (words_.size() + words > UINT32_MAX) throw std::bad_alloc();
  size_t at = words_.size();
  words_.resize(at + words);
  return static_cast<uint32_t>(at);
}

size_t SiteCaptures::detail_words(const CapturedSite& site) {
  return (site.sole ? 0 : 3 * (static_cast<size_t>(site.threads) + site.tasks)) + 2 * static_cast<size_t>(site.births) +
         (site.lifetimes ? internal::kLifetimeBuckets : 0);
}

CapturedSite SiteCaptures::capture(const RunState& state, const TriplesBySite& index, uint32_t site_id, double taken_s,
                                   const CapturedSite* into) {
  // One share per thread or task name: (owner, bytes, blocks). Few per site, so found by a scan.
  struct Share {
    uint32_t owner;
    int64_t bytes, blocks;
  };
  std::vector<Share> threads, tasks;
  CapturedSite site;
  site.site = site_id;
  site.taken_s = taken_s;
  const Site& of_state = state.sites()[site_id];
  site.temporary_allocations = of_state.temporary_blocks;
  auto add = [](std::vector<Share>& shares, uint32_t owner, int64_t bytes, int64_t blocks) {
    auto found = std::find_if(shares.begin(), shares.end(), [&](const Share& share) { return share.owner == owner; });
    if (found == shares.end()) found = shares.insert(shares.end(), Share{owner, 0, 0});
    found->bytes += bytes;
    found->blocks += blocks;
  };
  for (const uint32_t* id = index.begin(site_id); id != index.end(site_id); ++id) {
    const Triple& triple = state.triples()[*id];
    site.allocations += triple.alloc_count;
    if (triple.live_blocks() == 0 && triple.live_bytes() == 0) continue;
    site.live_bytes += triple.live_bytes();
    site.live_blocks += triple.live_blocks();
    state.for_each_thread_part(triple, [&](const ThreadPart& part) { add(threads, part.thread, part.live_bytes, part.live_blocks); });
    add(tasks, task_name(state, triple.task), triple.live_bytes(), triple.live_blocks());
  }
  // Largest first; ties in the order of thread index and of task name.
  std::sort(threads.begin(), threads.end(), [](const Share& a, const Share& b) { return a.owner < b.owner; });
  std::sort(tasks.begin(), tasks.end(), [&](const Share& a, const Share& b) { return task_names_[a.owner] < task_names_[b.owner]; });
  auto larger = [](const Share& a, const Share& b) { return a.bytes > b.bytes; };
  std::stable_sort(threads.begin(), threads.end(), larger);
  std::stable_sort(tasks.begin(), tasks.end(), larger);
  for (Share& share : threads) share.owner = thread_owner(state, share.owner);
  site.threads = static_cast<uint32_t>(threads.size());
  site.tasks = static_cast<uint32_t>(tasks.size());
  site.sole = threads.size() == 1 && tasks.size() == 1 && threads[0].bytes == site.live_bytes &&
              threads[0].blocks == site.live_blocks && tasks[0].bytes == site.live_bytes && tasks[0].blocks == site.live_blocks;
  if (site.sole) {
    site.threads = threads[0].owner;
    site.tasks = tasks[0].owner;
  }
  size_t births = 0;
  for (const BirthBin& bin : of_state.births) births += bin.bytes != 0;
  site.births = static_cast<uint16_t>(births);  // at most kMaxBirthBins
  site.lifetimes = !of_state.freed_bytes_by_lifetime.empty();

  size_t words = detail_words(site);
  if (into != nullptr && detail_words(*into) >= words) {
    site.details = into->details;
    released_words_ += detail_words(*into) - words;
  } else {
    if (into != nullptr) release(*into);
    site.details = append_words(words);
  }
  uint64_t* word = words_.data() + site.details;
  if (!site.sole) {
    for (const std::vector<Share>* shares : {&threads, &tasks}) {
      for (const Share& share : *shares) {
        *word++ = share.owner;
        *word++ = static_cast<uint64_t>(share.bytes);
        *word++ = static_cast<uint64_t>(share.blocks);
      }
    }
  }
  double bin_s = static_cast<double>(state.birth_bin_ns()) / 1e9;
  for (const BirthBin& bin : of_state.births) {
    if (bin.bytes == 0) continue;
    *word++ = std::bit_cast<uint64_t>(static_cast<double>(bin.bin) * bin_s);
    *word++ = static_cast<uint64_t>(bin.bytes);
  }
  if (site.lifetimes) {
    for (size_t bucket = 0; bucket < internal::kLifetimeBuckets; ++bucket) *word++ = of_state.freed_bytes_by_lifetime[bucket];
  }
  return site;
}

CapturedSite SiteCaptures::copy(const SiteCaptures& from, const CapturedSite& site) {
  CapturedSite copied = site;
  copied.details = append_words(detail_words(site));
  const uint64_t* source = from.words_.data() + site.details;
  std::copy(source, source + detail_words(site), words_.begin() + copied.details);
  // Owners and task names are numbered per SiteCaptures: their ids are this one's.
  auto owner_here = [&](uint64_t owner) {
    const ThreadOwner& named = from.owners_[owner];
    auto [found, added] = owner_ids_.emplace(fmt::format("{}|{}|{}", named.thread, named.tid, named.name),
                                             static_cast<uint32_t>(owners_.size()));
    if (added) owners_.push_back(named);
    return found->second;
  };
  auto task_here = [&](uint64_t task) {
    auto [found, added] = task_ids_.emplace(from.task_names_[task], static_cast<uint32_t>(task_names_.size()));
    if (added) task_names_.push_back(from.task_names_[task]);
    return found->second;
  };
  if (site.sole) {
    copied.threads = owner_here(site.threads);
    copied.tasks = task_here(site.tasks);
    return copied;
  }
  uint64_t* word = words_.data() + copied.details;
  for (uint32_t i = 0; i < site.threads; ++i, word += 3) *word = owner_here(*word);
  for (uint32_t i = 0; i < site.tasks; ++i, word += 3) *word = task_here(*word);
  return copied;
}

void SiteCaptures::release(const CapturedSite& site) { released_words_ += detail_words(site); }

void SiteCaptures::compact(const std::vector<CapturedSite*>& kept, bool always) {
  if (!always && released_words_ * 2 <= words_.size()) return;
  std::vector<CapturedSite*> by_offset = kept;
  std::sort(by_offset.begin(), by_offset.end(), [](const CapturedSite* a, const CapturedSite* b) { return a->details < b->details; });
  size_t end = 0;
  for (CapturedSite* site : by_offset) {
    size_t words = detail_words(*site);
    // In offset order, details only move towards the start: none is overwritten before it is read.
    std::copy(words_.begin() + static_cast<long>(site->details), words_.begin() + static_cast<long>(site->details + words),
              words_.begin() + static_cast<long>(end));
    site->details = static_cast<uint32_t>(end);
    end += words;
  }
  words_.resize(end);
  words_.shrink_to_fit();
  released_words_ = 0;
}

std::vector<LiveByBirth> SiteCaptures::births(const CapturedSite& site) const {
  std::vector<LiveByBirth> births;
  births.reserve(site.births);
  const uint64_t* word = words_.data() + site.details + (site.sole ? 0 : 3 * (static_cast<size_t>(site.threads) + site.tasks));
  for (uint16_t i = 0; i < site.births; ++i, word += 2) {
    births.push_back({std::bit_cast<double>(word[0]), static_cast<int64_t>(word[1])});
  }
  return births;
}

LifetimeHistogram::Buckets SiteCaptures::lifetimes(const CapturedSite& site) const {
  LifetimeHistogram::Buckets buckets{};
  if (!site.lifetimes) return buckets;
  const uint64_t* word = words_.data() + site.details + detail_words(site) - internal::kLifetimeBuckets;
  std::copy(word, word + internal::kLifetimeBuckets, buckets.begin());
  return buckets;
}

SiteSummary SiteCaptures::summary(const RunState& state, const CapturedSite& site) const {
  SiteSummary summary;
  summary.site = site.site;
  summary.domain = state.sites()[site.site].domain;
  summary.stack = state.sites()[site.site].stack;
  summary.live_bytes = site.live_bytes;
  summary.live_blocks = site.live_blocks;
  summary.allocations = site.allocations;
  summary.temporary_allocations = site.temporary_allocations;
  auto add_thread = [&](uint64_t owner, int64_t bytes, int64_t blocks) {
    const ThreadOwner& named = owners_[owner];
    summary.threads.push_back({named.thread, named.name, named.tid, bytes, blocks});
  };
  if (site.sole) {
    add_thread(site.threads, site.live_bytes, site.live_blocks);
    summary.tasks.push_back({task_names_[site.tasks], site.live_bytes, site.live_blocks});
  } else {
    const uint64_t* word = words_.data() + site.details;
    for (uint32_t i = 0; i < site.threads; ++i, word += 3) {
      add_thread(word[0], static_cast<int64_t>(word[1]), static_cast<int64_t>(word[2]));
    }
    for (uint32_t i = 0; i < site.tasks; ++i, word += 3) {
      summary.tasks.push_back({task_names_[word[0]], static_cast<int64_t>(word[1]), static_cast<int64_t>(word[2])});
    }
  }
  summary.births = births(site);
  return summary;
}

}  // namespace leakscope::report
