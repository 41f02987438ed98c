#include "report/site_summary.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace leakscope::report {

namespace {

// live_bytes_by_birth() is a site's live bytes by birth time (the stream's birth histogram, in the
// RunState's bins), oldest first, leaving out empty bins.
std::vector<LiveByBirth> live_bytes_by_birth(const RunState& state, uint32_t site) {
  std::vector<LiveByBirth> births;
  double bin_s = static_cast<double>(state.birth_bin_ns()) / 1e9;
  for (const BirthBin& bin : state.sites()[site].births) {
    if (bin.bytes != 0) births.push_back({static_cast<double>(bin.bin) * bin_s, bin.bytes});
  }
  return births;
}

}  // namespace

std::vector<SiteSummary> summarize_live_sites(const RunState& state) {
  std::unordered_map<uint32_t, SiteSummary> by_site;
  std::unordered_map<uint32_t, std::map<uint32_t, ThreadShare>> threads;
  std::unordered_map<uint32_t, std::map<std::string, TaskShare>> tasks;
  const auto& triples = state.triples();
  std::vector<uint64_t> allocations(state.sites().size(), 0);
  for (size_t id = 1; id < triples.size(); ++id) {
    const Triple& triple = triples[id];
    if (!triple.known) continue;
    allocations[triple.site] += triple.alloc_count;
    if (triple.live_blocks() == 0 && triple.live_bytes() == 0) continue;
    SiteSummary& summary = by_site[triple.site];
    const Site& site = state.sites()[triple.site];
    summary.site = triple.site;
    summary.domain = site.domain;
    summary.stack = site.stack;
    summary.live_bytes += triple.live_bytes();
    summary.live_blocks += triple.live_blocks();

    state.for_each_thread_part(triple, [&](const ThreadPart& part) {
      ThreadShare& thread_share = threads[triple.site][part.thread];
      const Thread& thread = state.threads()[part.thread];
      thread_share.thread = part.thread;
      thread_share.name = thread.name;
      thread_share.tid = thread.tid;
      thread_share.live_bytes += part.live_bytes;
      thread_share.live_blocks += part.live_blocks;
    });

    std::string task_name = triple.task != 0 ? state.tasks()[triple.task].name : std::string();
    TaskShare& task_share = tasks[triple.site][task_name];
    task_share.name = task_name;
    task_share.live_bytes += triple.live_bytes();
    task_share.live_blocks += triple.live_blocks();
  }
  std::vector<SiteSummary> sites;
  sites.reserve(by_site.size());
  for (auto& [id, summary] : by_site) {
    for (auto& [thread, share] : threads[id]) summary.threads.push_back(share);
    for (auto& [name, share] : tasks[id]) summary.tasks.push_back(share);
    std::stable_sort(summary.threads.begin(), summary.threads.end(),
                     [](const ThreadShare& a, const ThreadShare& b) { return a.live_bytes > b.live_bytes; });
    std::stable_sort(summary.tasks.begin(), summary.tasks.end(),
                     [](const TaskShare& a, const TaskShare& b) { return a.live_bytes > b.live_bytes; });
    summary.births = live_bytes_by_birth(state, id);
    summary.allocations = allocations[id];
    summary.temporary_allocations = state.sites()[id].temporary_blocks;
    summary.inner_bytes = state.sites()[id].inner_bytes;
    sites.push_back(std::move(summary));
  }
  std::sort(sites.begin(), sites.end(), [](const SiteSummary& a, const SiteSummary& b) {
    return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.site < b.site;
  });
  return sites;
}

}  // namespace leakscope::report
