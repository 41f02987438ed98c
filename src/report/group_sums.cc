#include "report/group_sums.h"

#include <algorithm>
#include <limits>

#include "core/stream_format.h"
#include "report/device_layers.h"

namespace leakscope::report {

bool ranked_before(const SummedPart& a, const SummedPart& b) {
  if (ranks_before(a, a.live_bytes, b, b.live_bytes)) return true;
  if (ranks_before(b, b.live_bytes, a, a.live_bytes)) return false;
  return a.site < b.site;
}

bool part_before(const SummedPart& a, const SummedPart& b) {
  return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : ranked_before(a, b);
}

SiteEvidence GroupSums::evidence(double now_s, uint32_t epochs) const {
  SiteEvidence evidence;
  evidence.live_bytes = series;
  evidence.births.reserve(births.size());
  for (const auto& [birth_s, bytes] : births) evidence.births.push_back({birth_s, bytes});
  evidence.now_s = now_s;
  evidence.epochs = epochs;
  evidence.allocations = allocations;
  evidence.live_blocks = live_blocks;
  evidence.made_during = made_during;
  evidence.free_list = largest_free_list;
  // A group of one site is judged as that site (group_judgement_of()).
  evidence.over_budget = parts.size() == 1 && !gone && over_budget_site;
  SampledPrecision sampled = precision_of(precision);
  evidence.recorded_blocks = sampled.recorded_blocks;
  evidence.relative_error = sampled.relative_error;
  return evidence;
}

void add_to_sums(RunAnalysis& analysis, const std::function<uint32_t(uint32_t)>& stream_stack,
                 const std::function<uint64_t(uint32_t)>& family, const SiteLeftOut& left_out, SummedGroups* sums) {
  const RunState& state = analysis.state;
  for (const GroupReport& group : analysis.groups) {
    GroupSums& sum = (*sums)[group.identity];
    bool first = sum.parts.empty();
    sum.family = family(stream_stack(analysis.stack_of(analysis.sites[group.parts[0]])));
    sum.user_keyed = group.user_keyed;
    sum.live_bytes += group.live_bytes;
    sum.live_blocks += group.live_blocks;
    sum.allocations += group.allocations;
    sum.temporary_allocations += group.temporary_allocations;
    sum.freed_at_exit_bytes += group.freed_at_exit_bytes;
    sum.inner_bytes += group.inner_bytes;
    sum.first_seen_s = std::min(sum.first_seen_s, group.first_seen_s);
    add_series(&sum.series, group_series(analysis, group));
    sum.gone = sum.gone || !group.gone_series.empty();
    // The group's first site in this read is its first as sites rank: of the sums, the first of those.
    uint32_t first_ranked = *std::min_element(group.parts.begin(), group.parts.end());
    for (uint32_t index : group.parts) {
      const SiteReport& site = analysis.sites[index];
      const CapturedSite& taken = analysis.capture_of(site);
      uint32_t stack = analysis.stack_of(site);
      SummedPart part{state.stream_site_id(taken.site), stream_stack(stack), analysis.domain_of(site), site.verdict,
                      site.growth_bytes_per_min, taken.live_bytes, taken.live_blocks, {}};
      for (const LiveByBirth& birth : analysis.captures.births(taken)) sum.births[birth.birth_s] += birth.bytes;
      sum.made_during = sum.parts.empty() ? site.made_during : joint_phase(sum.made_during, site.made_during);
      add_precision(analysis, site, &part.precision);
      add_part_ages(analysis, site, &sum.ages);
      sum.all_residue = sum.all_residue && site.runtime != nullptr;
      sum.all_reserve = sum.all_reserve && site.runtime == kCachingAllocatorReserve;
      if (sum.parts.empty() || part_before(part, sum.largest)) {
        sum.largest = part;
        sum.largest_runtime = site.runtime;
        sum.largest_free_list = state.is_marker_stack(stack, internal::kFreeListFrame);
        sum.over_budget_site = state.is_marker_stack(stack, internal::kOverBudgetFrame);
      }
      if (index == first_ranked && (first || ranked_before(part, sum.first_ranked))) {
        sum.first_ranked = part;
        sum.cut_at_depth = group.cut_at_depth;
      }
      SiteSummary summary = analysis.captures.summary(state, taken);
      for (const ThreadShare& share : summary.threads) {
        auto [found, added] = sum.threads.emplace(share.thread, share);
        if (added) continue;
        found->second.live_bytes += share.live_bytes;
        found->second.live_blocks += share.live_blocks;
      }
      for (const TaskShare& share : summary.tasks) {
        auto [found, added] = sum.tasks.emplace(share.name, share);
        if (added) continue;
        found->second.live_bytes += share.live_bytes;
        found->second.live_blocks += share.live_blocks;
      }
      if (counts_for_owners(site)) {
        sum.owned.bytes += taken.live_bytes;
        for (const ThreadShare& share : summary.threads) sum.owned.by_thread[share.thread] += share.live_bytes;
        for (const TaskShare& share : summary.tasks) sum.owned.by_task[share.name] += share.live_bytes;
      }
      if (left_out) {
        std::string why = left_out(analysis, site);
        if (why.empty()) {
          sum.gated_bytes += taken.live_bytes;
        } else {
          sum.left_out_bytes += taken.live_bytes;
          if (sum.left_out_by.empty() || part_before(part, sum.left_out_part)) {
            sum.left_out_by = why;
            sum.left_out_part = part;
          }
        }
      }
      sum.parts.push_back(part);
    }
  }
  for (const auto& [identity, series] : analysis.unmatched_gone_series) {
    GroupSums& sum = (*sums)[identity];
    add_series(&sum.series, series);
    sum.gone = true;
  }
}

void judge_sums(const RunAnalysis& any_read, SummedGroups* sums) {
  // Gone sites of a key that no read found live make no group, as in a single read.
  std::erase_if(*sums, [](const auto& entry) { return entry.second.parts.empty(); });
  // A first user frame that several groups share names each by its caller too (build_groups()).
  std::unordered_map<uint64_t, size_t> user_keyed_groups;  // by family
  for (const auto& [identity, sum] : *sums) user_keyed_groups[sum.family] += sum.user_keyed;
  for (auto& [identity, sum] : *sums) {
    sum.named_by_caller = sum.user_keyed && user_keyed_groups[sum.family] > 1;
    std::sort(sum.parts.begin(), sum.parts.end(), part_before);
    sum.precision = {};  // judged again when more groups are summed
    for (const SummedPart& part : sum.parts) {
      sum.precision.recorded_blocks += part.precision.recorded_blocks;
      sum.precision.variance += part.precision.variance;
      sum.precision.bytes += part.precision.bytes;
    }
    GroupReport group;
    group.summed = &sum;
    group.runtime = sum.all_residue ? sum.largest_runtime : nullptr;
    sum.judgement = group_judgement_of(any_read, group);
  }
}

}  // namespace leakscope::report
