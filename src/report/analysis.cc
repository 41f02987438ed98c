#include "report/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "report/device_layers.h"
#include "report/group_keys.h"
#include "report/group_sums.h"
#include "report/judged_state.h"
#include "report/report_passes.h"
#include "report/suppressions.h"
#include "report/units.h"

namespace leakscope::report {
namespace {

// startup_phase_of() is the start-up phase stack `stack` was made in: the runtime's marker when it
// cut the stack, else (whole stacks) whether it runs Python's import machinery.
StartupPhase startup_phase_of(const RunState& state, Symbolizer& symbolizer, uint32_t stack) {
  switch (state.startup_marker(stack)) {
    case internal::kImportFrame: return StartupPhase::kImport;
    case internal::kLibraryLoadFrame: return StartupPhase::kLibraryLoad;
    case internal::kBeforeMainFrame: return StartupPhase::kBeforeMain;
    default: break;
  }
  return symbolizer.runs_python_function(stack, "_find_and_load", "<frozen importlib._bootstrap") ? StartupPhase::kImport
                                                                                                 : StartupPhase::kNone;
}

// Untracked growth must be at least this share of RSS growth, and this fast, to be reported.
constexpr double kMinUntrackedShare = 0.5;
constexpr double kMinUntrackedBytesPerMin = 256 * 1024;
// The least unexplained growth over the samples' span: in a run of a few seconds, the pages its
// threads and libraries touch for the first time, and a step or two of the allocator's heap (1 MiB
// at 0.9 s of a 2 s libtorch run, then flat), grow anonymous memory at rates that pass the one above.
constexpr double kMinUntrackedBytes = 4 << 20;

// An owner grows when it holds at least this share of the growth of all the program's leaks.
constexpr double kLeastOwnerShare = 0.01;

// stable_order() is the order that a stable sort of `items` by `before` would give them, as
// indices: sorting those moves 4 bytes per item, not the items.
template <typename T, typename Before>
std::vector<uint32_t> stable_order(const std::vector<T>& items, Before before) {
  std::vector<uint32_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return before(items[a], items[b]); });
  return order;
}

// reorder() puts items[order[i]] at i, in place, following each cycle of the permutation.
template <typename T>
void reorder(std::vector<T>& items, std::vector<uint32_t> order) {
  for (size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    T held = std::move(items[start]);
    size_t at = start;
    while (order[at] != start) {
      size_t from = order[at];
      items[at] = std::move(items[from]);
      order[at] = static_cast<uint32_t>(at);
      at = from;
    }
    items[at] = std::move(held);
    order[at] = static_cast<uint32_t>(at);
  }
}

// owner_trend() is the trend of what one task name or thread owns, over the run: how steadily the
// floor of its live bytes rises. Its rate is not this: it is its share of the leaks' (analyze_run()).
double owner_trend(const std::vector<SeriesPoint>& points) {
  return points.empty() ? 0 : mann_kendall(live_floor(points)).z;
}

void sort_by_live_bytes(std::vector<OwnerReport>& owners) {
  std::stable_sort(owners.begin(), owners.end(),
                   [](const OwnerReport& a, const OwnerReport& b) { return a.live_bytes > b.live_bytes; });
}

int64_t host_bytes(const std::array<int64_t, internal::kDomainCount>& by_domain) {
  int64_t total = 0;
  for (size_t d = 0; d < by_domain.size(); ++d) {
    if (is_host_domain(static_cast<Domain>(d))) total += by_domain[d];
  }
  return total;
}

// site_series() is a site's live bytes over time. After a shutdown that freed up to the mark it
// ends where the shutdown began, at the value the site is taken with; else a site taken from a
// snapshot before a teardown mark ends at the value it had there, at the mark: the snapshots
// between, taken while the program tore down, are left out.
std::vector<SeriesPoint> site_series(const RunAnalysis& analysis, const SiteReport& site) {
  const CapturedSite& taken = analysis.capture_of(site);
  std::vector<SeriesPoint> points = analysis.series->site(taken.site);
  if (points.empty()) return points;
  if (analysis.judged_until_s < analysis.now_s) {
    while (points.size() > 1 && points.back().time_s > analysis.judged_until_s) points.pop_back();
    points.back().value = static_cast<double>(taken.live_bytes);
    return points;
  }
  if (!taken.from_earlier) return points;
  SeriesPoint mark = points.back();
  while (!points.empty() && points.back().time_s > taken.taken_s) points.pop_back();
  mark.value = static_cast<double>(taken.live_bytes);
  points.push_back(mark);
  return points;
}

// gone_site_series() is the series of a site that holds nothing at the judged snapshot, up to
// where judgements are made.
std::vector<SeriesPoint> gone_site_series(const RunAnalysis& analysis, uint32_t site) {
  std::vector<SeriesPoint> points = analysis.series->site(site);
  while (!points.empty() && points.back().time_s > analysis.judged_until_s) points.pop_back();
  return points;
}

// What the reading pass keeps of the peak: the host sites live there.
struct PeakCapture {
  std::vector<std::pair<uint32_t, int64_t>> sites;
};

// capture_lost_sites() takes the sites that lost blocks at the last leak check as they are in its
// snapshot, largest first: one that is not live at the judged snapshot is still reported.
std::vector<CapturedSite> capture_lost_sites(const RunState& state, SiteCaptures* captures) {
  std::unordered_map<uint32_t, LostFigures> lost = lost_by_site(state);
  TriplesBySite triples(state);
  double taken_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  std::vector<CapturedSite> sites;
  for (const auto& [id, figures] : lost) {
    if (triples.live(id)) sites.push_back(captures->capture(state, triples, id, taken_s));
  }
  std::sort(sites.begin(), sites.end(), [](const CapturedSite& a, const CapturedSite& b) {
    return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.site < b.site;
  });
  return sites;
}

// capture_peak() takes the snapshot just read as the peak when `tracked` is more than the peak so
// far, keeping the sites `counted` counts live there.
template <typename Counted>
void capture_peak(const RunState& state, int64_t tracked, Counted counted, PeakReport* peak, PeakCapture* capture) {
  if (tracked <= peak->tracked_bytes) return;
  peak->snapshot = state.snapshot_count();
  peak->time_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  peak->tracked_bytes = tracked;
  const auto& sites = state.sites();
  auto held = [&](size_t id) { return sites[id].known && sites[id].live_bytes > 0 && counted(id); };
  size_t count = 0;
  for (size_t id = 1; id < sites.size(); ++id) count += held(id);
  capture->sites.clear();
  capture->sites.reserve(count);  // the peak is often taken again as it rises: never grown by doubling
  for (size_t id = 1; id < sites.size(); ++id) {
    if (held(id)) capture->sites.emplace_back(static_cast<uint32_t>(id), sites[id].live_bytes);
  }
}

void capture_host_peak(const RunState& state, PeakReport* peak, PeakCapture* capture) {
  capture_peak(state, host_bytes(state.live_bytes_by_domain()), [&](size_t id) { return is_host_domain(state.sites()[id].domain); },
               peak, capture);
}

// What the reading pass keeps of the device peak: its sites, and the cuda sites known so far to be
// a caching allocator's reserve by their stacks (through libc10_cuda), read once each.
struct DevicePeakCapture {
  PeakCapture held;
  size_t sites_read = 1;
  std::unordered_set<uint32_t> allocator_segments;

  // read_new_sites() looks at the stacks of the cuda sites defined since the last snapshot.
  void read_new_sites(const RunState& state) {
    for (; sites_read < state.sites().size() && state.sites()[sites_read].known; ++sites_read) {
      const Site& site = state.sites()[sites_read];
      if (site.domain != Domain::kCuda || site.stack >= state.stacks().size()) continue;
      for (uint64_t frame : state.frames(state.stacks()[site.stack])) {
        if ((frame & internal::kInterpretedFrameTag) != 0) continue;
        auto module = std::find_if(state.modules().begin(), state.modules().end(),
                                   [&](const Module& m) { return m.contains(frame); });
        if (module != state.modules().end() && is_caching_allocator_module(module->path)) {
          allocator_segments.insert(static_cast<uint32_t>(sites_read));
          break;
        }
      }
    }
  }
  bool reserve(const RunState& state, uint32_t site) const {
    return state.held_inner_blocks(site) || allocator_segments.count(site) != 0;
  }
};

// A device's memory as the program holds it: tensors (c10_cuda), managed memory, and the driver's
// blocks outside a caching allocator's reserve (device_layers.h: segments, which stay when their
// tensors go, hold them).
void capture_device_peak(const RunState& state, PeakReport* peak, DevicePeakCapture* capture) {
  capture->read_new_sites(state);
  const auto& by_domain = state.live_bytes_by_domain();
  auto at = [&](Domain domain) { return by_domain[static_cast<size_t>(domain)]; };
  int64_t reserve = 0;
  for (uint32_t site : state.sites_that_held_inner_blocks()) {
    if (site < state.sites().size() && capture->allocator_segments.count(site) == 0) reserve += state.sites()[site].live_bytes;
  }
  for (uint32_t site : capture->allocator_segments) reserve += state.sites()[site].live_bytes;
  int64_t held = at(Domain::kC10Cuda) + at(Domain::kCudaManaged) + std::max<int64_t>(0, at(Domain::kCuda) - reserve);
  auto counted = [&](size_t id) {
    Domain domain = state.sites()[id].domain;
    return domain == Domain::kC10Cuda || domain == Domain::kCudaManaged ||
           (domain == Domain::kCuda && !capture->reserve(state, static_cast<uint32_t>(id)));
  };
  capture_peak(state, held, counted, peak, &capture->held);
}

// observe_device_peaks() takes the snapshot just read as a device's peak where the program held
// more of that device than at any snapshot before.
void observe_device_peaks(const RunState& state, std::vector<DevicePeak>* peaks) {
  for (const DeviceMemory& device : state.devices()) {
    int64_t tensors_outside = std::max<int64_t>(0, device.live(Domain::kC10Cuda) - static_cast<int64_t>(device.inner_bytes));
    int64_t taken = device.live(Domain::kCuda) + device.live(Domain::kCudaManaged) + tensors_outside;
    auto peak = std::find_if(peaks->begin(), peaks->end(), [&](const DevicePeak& known) { return known.device == device.device; });
    if (peak == peaks->end()) {
      if (taken <= 0) continue;
      peak = peaks->insert(peaks->end(), DevicePeak{device.device});
    }
    if (taken <= peak->bytes) continue;
    peak->bytes = taken;
    peak->snapshot = state.snapshot_count();
    peak->time_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  }
}

double first_seen_s(const RunState& state, uint32_t site) { return static_cast<double>(state.sites()[site].first_seen_ns) / 1e9; }

SiteEvidence site_evidence(const RunAnalysis& analysis, const SiteReport& site) {
  const CapturedSite& taken = analysis.capture_of(site);
  SiteEvidence evidence;
  evidence.live_bytes = site_series(analysis, site);
  evidence.births = analysis.captures.births(taken);
  evidence.now_s = analysis.judged_until_s;
  evidence.epochs = analysis.at.index;
  evidence.allocations = taken.allocations;
  evidence.live_blocks = taken.live_blocks;
  evidence.made_during = site.made_during;
  evidence.over_budget = analysis.state.is_marker_stack(analysis.stack_of(site), internal::kOverBudgetFrame);
  evidence.free_list = analysis.state.is_marker_stack(analysis.stack_of(site), internal::kFreeListFrame);
  PrecisionSum sum;
  add_precision(analysis, site, &sum);
  SampledPrecision precision = precision_of(sum);
  evidence.recorded_blocks = precision.recorded_blocks;
  evidence.relative_error = precision.relative_error;
  return evidence;
}

// group_evidence() is what a group of several sites is judged on: the sum of its parts' series
// and of those of its key that were gone by the judged snapshot, all their births, and the
// start-up phase they were all made in, if one.
SiteEvidence group_evidence(const RunAnalysis& analysis, const GroupReport& group) {
  if (group.summed != nullptr) return group.summed->evidence(analysis.judged_until_s, analysis.at.index);
  SiteEvidence evidence;
  evidence.made_during = analysis.sites[group.parts[0]].made_during;
  size_t births = 0;
  for (uint32_t part : group.parts) births += analysis.capture_of(analysis.sites[part]).births;
  evidence.births.reserve(births);
  add_series(&evidence.live_bytes, group.gone_series);
  for (uint32_t part : group.parts) {
    const SiteReport& site = analysis.sites[part];
    evidence.made_during = joint_phase(evidence.made_during, site.made_during);
    add_series(&evidence.live_bytes, site_series(analysis, site));
    std::vector<LiveByBirth> births = analysis.captures.births(analysis.capture_of(site));
    evidence.births.insert(evidence.births.end(), births.begin(), births.end());
  }
  evidence.now_s = analysis.judged_until_s;
  evidence.epochs = analysis.at.index;
  evidence.allocations = group.allocations;
  evidence.live_blocks = group.live_blocks;
  evidence.free_list = analysis.state.is_marker_stack(analysis.stack_of(analysis.sites[group.parts[0]]), internal::kFreeListFrame);
  SampledPrecision precision = sampled_precision(analysis, group);
  evidence.recorded_blocks = precision.recorded_blocks;
  evidence.relative_error = precision.relative_error;
  return evidence;
}

// settle_reserve() judges a caching allocator's reserve: what grows there is tensors (judged at
// their own c10_cuda sites) or the cache growing to what requests ask, never a leak of its own.
void settle_reserve(SiteJudgement* judgement) {
  if (judgement->verdict != Verdict::kLeak) return;
  judgement->verdict = Verdict::kCache;
  judgement->reason = "the caching allocator's reserve grows with what requests ask of it; the tensors it holds are "
                      "judged at their own sites (c10_cuda)";
}

// settle_residue() words the judgement of the runtime's own residue that too few snapshots saw to
// judge: `check` leaves it out whatever its verdict, so a longer run or a shorter interval is no
// advice for it (a stdio buffer first allocated as the program prints its result).
void settle_residue(SiteJudgement* judgement) {
  if (judgement->verdict != Verdict::kUnknown || judgement->samples >= kMinSamples) return;
  judgement->reason = fmt::format("too few snapshots to judge ({}), and no need to: it is the runtime's own", judgement->samples);
}

// take_sums() makes `group` (identity set) one of the summed groups when it is.
void take_sums(const RunAnalysis& analysis, const SymbolizedFrame* caller, GroupReport* group) {
  if (!analysis.summed_groups) return;
  auto found = analysis.summed_groups->find(group->identity);
  if (found == analysis.summed_groups->end()) return;
  const GroupSums& sums = found->second;
  group->summed = &sums;
  group->live_bytes = sums.live_bytes;
  group->live_blocks = sums.live_blocks;
  group->allocations = sums.allocations;
  group->temporary_allocations = sums.temporary_allocations;
  group->freed_at_exit_bytes = sums.freed_at_exit_bytes;
  group->inner_bytes = sums.inner_bytes;
  group->first_seen_s = sums.first_seen_s;
  group->cut_at_depth = sums.cut_at_depth;
  group->caller_frame = sums.named_by_caller ? caller : nullptr;
}

// build_groups() gathers the (sorted) sites by their group key and judges each group on the sum
// of its parts. With `summing`, the read adds to summed groups: the gone sites it holds whose
// groups it does not are kept apart.
void build_groups(RunAnalysis& analysis, GroupKeys& keys, bool summing) {
  const RunState& state = analysis.state;
  std::unordered_map<GroupKey, uint32_t, GroupKeyHash> by_key;
  std::unordered_map<uint32_t, uint32_t> groups_by_user_frame;  // of kUser keys: how many groups share it
  std::vector<GroupReport> groups;
  std::vector<const SymbolizedFrame*> callers;
  std::vector<uint32_t> user_frames;  // each group's first user frame's id, 0 when not kUser
  std::vector<uint32_t> sizes;
  for (size_t i = 0; i < analysis.sites.size(); ++i) {
    SiteReport& site = analysis.sites[i];
    const CapturedSite& taken = analysis.capture_of(site);
    NamedKey key = keys.of(taken.site);
    key.key.driver_layer = is_driver_domain(state.sites()[taken.site].domain);
    auto [found, inserted] = by_key.emplace(key.key, static_cast<uint32_t>(groups.size()));
    if (inserted) {
      GroupReport group;
      group.has_user_frame = key.has_user_frame;
      group.user_frame = key.frame;
      uint32_t stack = analysis.stack_of(site);
      group.cut_at_depth = !key.has_user_frame && stack < state.stacks().size() && state.stacks()[stack].depth >= state.process().depth;
      group.first_seen_s = first_seen_s(state, taken.site);
      group.identity = keys.identity_of(key.key, state.stream_site_id(taken.site));
      group.user_keyed = key.key.kind == GroupKey::Kind::kUser;
      groups.push_back(group);
      sizes.push_back(0);
      callers.push_back(key.caller);
      bool user = key.key.kind == GroupKey::Kind::kUser;
      user_frames.push_back(user ? key.key.first : 0);
      if (user) ++groups_by_user_frame[key.key.first];
    }
    GroupReport& group = groups[found->second];
    ++sizes[found->second];
    group.live_bytes += taken.live_bytes;
    group.live_blocks += taken.live_blocks;
    group.allocations += taken.allocations;
    group.temporary_allocations += taken.temporary_allocations;
    group.freed_at_exit_bytes += freed_at_exit_bytes(analysis, site);
    group.lost += site.lost;
    if (auto inner = analysis.inner_bytes.find(taken.site); inner != analysis.inner_bytes.end()) group.inner_bytes += inner->second;
    group.first_seen_s = std::min(group.first_seen_s, first_seen_s(state, taken.site));
    site.group = found->second;
  }
  // A loop whose objects come from new call paths below the same line (a data loader's second
  // epoch, a dict rebuilt by another path) moves its bytes from sites that are gone by the judged
  // snapshot to new ones: their series count in the group's, so that bytes that only moved are
  // not read as growth.
  std::vector<bool> taken(state.sites().size(), false);
  for (const CapturedSite& site : analysis.captured) taken[site.site] = true;
  for (uint32_t site = 1; site < state.sites().size(); ++site) {
    if (taken[site] || !state.sites()[site].known) continue;
    std::vector<SeriesPoint> series = gone_site_series(analysis, site);
    if (std::none_of(series.begin(), series.end(), [](const SeriesPoint& point) { return point.value != 0; })) continue;
    GroupKey key = keys.of(site).key;
    key.driver_layer = is_driver_domain(state.sites()[site].domain);
    auto found = by_key.find(key);
    if (found != by_key.end()) {
      add_series(&groups[found->second].gone_series, series);
    } else if (summing) {
      add_series(&analysis.unmatched_gone_series[keys.identity_of(key, state.stream_site_id(site))], series);
    }
  }
  by_key = {};
  for (size_t g = 0; g < groups.size(); ++g) {
    if (user_frames[g] != 0 && groups_by_user_frame[user_frames[g]] > 1) groups[g].caller_frame = callers[g];
  }
  // Every group's parts in one vector, group after group, each largest first.
  std::vector<size_t> next(groups.size() + 1, 0);
  for (size_t g = 0; g < groups.size(); ++g) next[g + 1] = next[g] + sizes[g];
  analysis.group_parts.resize(analysis.sites.size());
  for (size_t i = 0; i < analysis.sites.size(); ++i) analysis.group_parts[next[analysis.sites[i].group]++] = static_cast<uint32_t>(i);
  for (size_t g = 0, begin = 0; g < groups.size(); begin += sizes[g], ++g) {
    auto first = analysis.group_parts.begin() + static_cast<long>(begin);
    std::sort(first, first + sizes[g], [&](uint32_t a, uint32_t b) {
      int64_t a_bytes = analysis.capture_of(analysis.sites[a]).live_bytes, b_bytes = analysis.capture_of(analysis.sites[b]).live_bytes;
      return a_bytes != b_bytes ? a_bytes > b_bytes : a < b;
    });
    GroupReport& group = groups[g];
    group.parts = std::span<const uint32_t>(analysis.group_parts.data() + begin, sizes[g]);
    take_sums(analysis, callers[g], &group);
    SiteJudgement judgement = group_judgement_of(analysis, group);
    group.verdict = judgement.verdict;
    group.growth_bytes_per_min = judgement.growth_bytes_per_min;
  }
  std::vector<uint32_t> order = stable_order(groups, [](const GroupReport& a, const GroupReport& b) {
    return ranks_before(a, a.live_bytes, b, b.live_bytes);
  });
  std::vector<uint32_t> new_index(groups.size());
  for (size_t i = 0; i < order.size(); ++i) new_index[order[i]] = static_cast<uint32_t>(i);
  reorder(groups, std::move(order));
  analysis.groups = std::move(groups);
  for (SiteReport& site : analysis.sites) site.group = new_index[site.group];
}

void build_peak_holders(RunAnalysis& analysis, PeakReport* peak, const PeakCapture& capture, GroupKeys& keys) {
  std::unordered_map<GroupKey, size_t, GroupKeyHash> by_key;
  std::vector<PeakReport::Holder>& holders = peak->holders;
  // Keyed as the groups are: the driver's blocks never one with the program's objects.
  auto key_of = [&](uint32_t site) {
    NamedKey key = keys.of(site);
    key.key.driver_layer = is_driver_domain(analysis.state.sites()[site].domain);
    return key;
  };
  for (const auto& [site, bytes] : capture.sites) {
    NamedKey key = key_of(site);
    auto [found, inserted] = by_key.emplace(key.key, holders.size());
    if (inserted) holders.push_back({key.frame, 0, SIZE_MAX, site, keys.identity_of(key.key, analysis.state.stream_site_id(site))});
    holders[found->second].bytes += bytes;
  }
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    auto holder = by_key.find(key_of(analysis.capture_of(analysis.sites[analysis.groups[g].parts[0]]).site).key);
    if (holder != by_key.end() && holders[holder->second].group == SIZE_MAX) holders[holder->second].group = g;
  }
  std::stable_sort(holders.begin(), holders.end(),
                   [](const PeakReport::Holder& a, const PeakReport::Holder& b) { return a.bytes > b.bytes; });
}

}  // namespace

// joint_phase() is the phase of a group whose parts were made in `a` and `b`: none unless both
// were made in one.
StartupPhase joint_phase(StartupPhase a, StartupPhase b) {
  if (a == StartupPhase::kNone || b == StartupPhase::kNone) return StartupPhase::kNone;
  return a == b ? a : StartupPhase::kSeveral;
}

// add_series() adds `part` to `sum`: series that share one time grid (LiveSeries tracks all end at
// its last sample), aligned at their ends. A group's parts are added one at a time, never held
// all at once.
void add_series(std::vector<SeriesPoint>* sum, const std::vector<SeriesPoint>& part) {
  if (part.size() > sum->size()) {
    std::vector<SeriesPoint> longer(part.begin(), part.begin() + static_cast<long>(part.size() - sum->size()));
    for (SeriesPoint& point : longer) point.value = 0;
    longer.insert(longer.end(), sum->begin(), sum->end());
    *sum = std::move(longer);
  }
  size_t offset = sum->size() - part.size();
  for (size_t i = 0; i < part.size(); ++i) (*sum)[offset + i].value += part[i].value;
}

// group_judgement_of() judges `group` on its parts (its one site's own, when it has one).
SiteJudgement group_judgement_of(const RunAnalysis& analysis, const GroupReport& group) {
  bool alone = group.summed == nullptr && group.parts.size() == 1 && group.gone_series.empty();
  SiteJudgement judgement = alone ? site_judgement(analysis, group.parts[0]) : judge_site(group_evidence(analysis, group));
  bool reserve = group.summed != nullptr ? group.summed->all_reserve
                                         : std::all_of(group.parts.begin(), group.parts.end(), [&](uint32_t part) {
                                             return analysis.sites[part].runtime == kCachingAllocatorReserve;
                                           });
  if (reserve) settle_reserve(&judgement);
  if (group.runtime != nullptr && group.runtime != kCachingAllocatorReserve) settle_residue(&judgement);
  return judgement;
}

void add_precision(const RunAnalysis& analysis, const SiteReport& site, PrecisionSum* sum) {
  uint64_t interval = analysis.state.process().sample_interval;
  const CapturedSite& captured = analysis.capture_of(site);
  Domain domain = analysis.domain_of(site);
  bool sampled = domain == Domain::kHeap || domain == Domain::kC10Cpu;  // mappings and devices are recorded whole
  if (interval == 0 || !sampled || captured.live_bytes <= 0 || captured.live_blocks <= 0) return;
  double blocks = static_cast<double>(captured.live_blocks), bytes = static_cast<double>(captured.live_bytes);
  double size = bytes / blocks;
  double recorded = 1 - std::exp(-size / static_cast<double>(interval));
  sum->recorded_blocks += blocks * recorded;
  sum->variance += blocks * size * size * (1 - recorded) / recorded;
  sum->bytes += bytes;
}

SampledPrecision precision_of(const PrecisionSum& sum) {
  if (sum.bytes <= 0) return {};
  return {sum.recorded_blocks, std::sqrt(sum.variance) / sum.bytes};
}

bool is_host_domain(Domain domain) {
  return domain == Domain::kHeap || domain == Domain::kMmap || domain == Domain::kBrk || domain == Domain::kC10Cpu;
}

std::vector<ResidencyFinding> untracked_growth(const std::vector<ProcessSample>& samples) {
  std::vector<ResidencyFinding> findings;
  if (samples.size() < kMinSamples) return findings;
  std::vector<SeriesPoint> program_anon, tracked;
  for (const ProcessSample& sample : samples) {
    // Anonymous memory only: file pages (a large library's code faulting in as new paths run) are
    // not allocations. leakscope's own memory is anonymous too, and grows with new stacks: it is
    // known, not unexplained.
    uint64_t anon = sample.anon_bytes > sample.overhead_bytes ? sample.anon_bytes - sample.overhead_bytes : 0;
    program_anon.push_back({sample.time_s, static_cast<double>(anon)});
    tracked.push_back({sample.time_s, static_cast<double>(host_bytes(sample.tracked_bytes))});
  }
  ResidencyFinding finding;
  finding.kind = "untracked_growth";
  finding.rss_growth_bytes_per_min = theil_sen_slope(program_anon) * 60;
  finding.tracked_growth_bytes_per_min = theil_sen_slope(tracked) * 60;
  // Tracked bytes that shrink explain none of the growth, and make none of it more unexplained:
  // memory the allocator keeps after frees is a finding only when the process itself grows.
  double explained = std::max(finding.tracked_growth_bytes_per_min, 0.0);
  finding.untracked_growth_bytes_per_min = finding.rss_growth_bytes_per_min - explained;
  finding.mann_kendall_z = mann_kendall(program_anon).z;
  // Growth, not a step: memory the allocator keeps after one large block (glibc then serves the
  // next from its heap, and RSS stays up) is a level that rose once; growth rose in several steps,
  // the last of them recent, as a leak's does (verdict.h).
  // Measured above the lowest level: steps are told against how far memory rose, not its size.
  double lowest = program_anon.front().value, highest = 0;
  for (const SeriesPoint& point : program_anon) lowest = std::min(lowest, point.value);
  std::vector<SeriesPoint> risen = program_anon;
  for (SeriesPoint& point : risen) highest = std::max(highest, point.value -= lowest);
  Rises rises = rises_of(risen, highest);
  double span_s = samples.back().time_s - samples.front().time_s;
  bool grows = rises.steps >= kMinSteps && samples.back().time_s - rises.last_rise_s <= kStallSpan * span_s;
  if (grows && finding.mann_kendall_z >= kTrendZ && finding.rss_growth_bytes_per_min > 0 &&
      finding.untracked_growth_bytes_per_min >= kMinUntrackedShare * finding.rss_growth_bytes_per_min &&
      finding.untracked_growth_bytes_per_min >= kMinUntrackedBytesPerMin &&
      finding.untracked_growth_bytes_per_min * span_s / 60 >= kMinUntrackedBytes) {
    finding.text = fmt::format(
        "anonymous RSS (less leakscope's own memory) grows {}/min but tracked allocations only {}/min: {}/min is not explained by them "
        "(fragmentation, memory the allocator keeps, or memory leakscope does not see)",
        format_bytes(static_cast<int64_t>(finding.rss_growth_bytes_per_min)),
        format_bytes(static_cast<int64_t>(finding.tracked_growth_bytes_per_min)),
        format_bytes(static_cast<int64_t>(finding.untracked_growth_bytes_per_min)));
    findings.push_back(finding);
  }
  return findings;
}

std::unique_ptr<RunAnalysis> analyze_run(const std::string& path, const AnalysisOptions& options) {
  StreamReader reader(path);
  return analyze_run(reader, options);
}

std::unique_ptr<RunAnalysis> analyze_run(StreamReader& reader, const AnalysisOptions& options) {
  std::vector<SnapshotMark> marks = reader.skim_snapshots();
  ChosenSnapshot at = choose_snapshot(options.at, marks, reader.path(), sample_interval_of(reader.path()));
  if (options.site_memory != 0 && options.top != 0) return analyze_in_parts(reader, at, marks, options);
  return analyze_sites(reader, at, marks, options, nullptr, true);
}

std::unique_ptr<RunAnalysis> analyze_sites(StreamReader& reader, const ChosenSnapshot& at, const std::vector<SnapshotMark>& marks,
                                           const AnalysisOptions& options, std::function<bool(uint32_t stack)> keep, bool warn,
                                           std::unique_ptr<Symbolizer> symbolizer, std::shared_ptr<const SummedGroups> summed,
                                           bool summing) {
  auto analysis = std::make_unique<RunAnalysis>();
  analysis->at = at;
  analysis->summed_groups = std::move(summed);
  uint32_t judged = analysis->at.index;
  if (keep) analysis->state.keep_sites_of(std::move(keep));
  analysis->state.keep_leak_checks_until(judged);
  analysis->series = std::make_unique<LiveSeries>();
  LiveSeries& series = *analysis->series;
  JudgedCapture capture(analysis->at);
  PeakCapture peak;
  DevicePeakCapture device_peak;
  SiteCaptures lost_captures;
  std::vector<CapturedSite> lost_at_check;
  read_run(reader, 0, &analysis->state, [&](const RunState& state) {
    const SnapshotInfo& info = state.last_snapshot();
    analysis->peak_program_rss_bytes =
        std::max(analysis->peak_program_rss_bytes, info.rss_bytes - std::min(info.rss_bytes, info.overhead_bytes));
    if (state.leak_check() && state.leak_check()->snapshot == state.snapshot_count()) {
      lost_captures = SiteCaptures();
      lost_at_check = capture_lost_sites(state, &lost_captures);
    }
    if (state.snapshot_count() > judged) return;
    capture_host_peak(state, &analysis->peak, &peak);
    capture_device_peak(state, &analysis->device_peak, &device_peak);
    observe_device_peaks(state, &analysis->device_peaks);
    // A high-water snapshot was taken because a burst rose: it shows the peak, and is no sample
    // of the sites' course, which periodic snapshots take at moments that owe nothing to it.
    if (info.reason == internal::SnapshotReason::kHighWater && state.snapshot_count() != judged) return;
    series.observe(state);
    capture.observe(state);
    if (capture.done()) series.finish(state);
  }, warn);
  analysis->damaged_spans = reader.damaged().size();
  const RunState& state = analysis->state;
  if (state.snapshot_count() < judged) {
    // The skim saw more snapshots than the full read could use (a frame it did not check).
    throw StreamError(fmt::format("{}: snapshot {} could not be read", reader.path(), judged));
  }
  analysis->judged = capture.info();
  analysis->now_s = static_cast<double>(capture.info().time_ns) / 1e9;
  analysis->judged_until_s =
      analysis->at.shutdown != 0 ? static_cast<double>(marks[analysis->at.shutdown - 1].time_ns) / 1e9 : analysis->now_s;
  analysis->live_bytes_by_domain = capture.live_bytes_by_domain();
  analysis->devices = capture.devices();
  analysis->inner_bytes = capture.inner_bytes_by_site();
  {
    JudgedSites judged_sites = capture.take_sites();
    analysis->captures = std::move(judged_sites.captures);
    analysis->captured = std::move(judged_sites.sites);
  }
  if (analysis->at.teardown != 0) {
    analysis->teardown.mark = analysis->at.teardown;
    analysis->teardown.begin_s = static_cast<double>(marks[analysis->at.teardown - 1].time_ns) / 1e9;
    analysis->teardown.end_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  }
  // Sites that lost blocks at the leak check but are not live at the judged snapshot follow the
  // judged ones, as they were at the check.
  size_t judged_count = analysis->captured.size();
  std::unordered_map<uint32_t, LostFigures> lost = lost_by_site(state);
  if (!lost.empty()) {
    std::vector<bool> judged_site(state.sites().size(), false);
    for (const CapturedSite& site : analysis->captured) judged_site[site.site] = true;
    for (const CapturedSite& at_check : lost_at_check) {
      if (!judged_site[at_check.site]) analysis->captured.push_back(analysis->captures.copy(lost_captures, at_check));
    }
  }
  lost_at_check = {};
  lost_captures = SiteCaptures();
  // All that is read of the triples, births and lifetimes is taken: their memory goes to the sites'
  // records made next.
  analysis->state.release_counters();
  analysis->sites.resize(analysis->captured.size());  // a stack-heavy run judges a few hundred thousand
  for (size_t i = 0; i < analysis->sites.size(); ++i) {
    SiteReport& site = analysis->sites[i];
    site.captured = static_cast<uint32_t>(i);
    site.from_leak_check = i >= judged_count;
    auto found = lost.find(analysis->captured[i].site);
    if (found != lost.end()) site.lost = found->second;
    analysis->teardown.freed_bytes += freed_at_exit_bytes(*analysis, site);
  }

  if (symbolizer) {
    symbolizer->rebind(state);
    analysis->symbolizer = std::move(symbolizer);
  } else {
    analysis->symbolizer = std::make_unique<Symbolizer>(state);
  }
  analysis->roles = FrameRoles(options.fold, state.process().exe);
  for (SiteReport& site : analysis->sites) {
    site.made_during = startup_phase_of(state, *analysis->symbolizer, analysis->stack_of(site));
    if (site.from_leak_check) continue;  // not judged: its reason says why (site_judgement())
    SiteJudgement judgement = judge_site(site_evidence(*analysis, site));
    site.verdict = judgement.verdict;
    site.growth_bytes_per_min = judgement.growth_bytes_per_min;
  }
  reorder(analysis->sites, stable_order(analysis->sites, [&](const SiteReport& a, const SiteReport& b) {
            return ranks_before(a, analysis->capture_of(a).live_bytes, b, analysis->capture_of(b).live_bytes);
          }));
  // Residue is known before groups are judged: a caching allocator's reserve is judged as one.
  for (SiteReport& site : analysis->sites) {
    std::vector<const SymbolizedFrame*> frames = analysis->symbolizer->frames(analysis->stack_of(site));
    site.runtime = runtime_residue(frames);
    if (site.runtime == nullptr) site.runtime = caching_allocator_reserve(state, analysis->capture_of(site).site, frames);
    if (site.lost.any()) site.lost_runtime = lost_residue(frames, analysis->roles);
  }
  GroupKeys keys(state, *analysis->symbolizer, analysis->roles);
  build_groups(*analysis, keys, summing);
  for (GroupReport& group : analysis->groups) {
    if (group.summed != nullptr) {
      group.runtime = group.summed->all_residue ? group.summed->largest_runtime : nullptr;
      continue;  // nothing was lost: a leak-checked stream is read at once
    }
    bool residue = std::all_of(group.parts.begin(), group.parts.end(),
                               [&](uint32_t part) { return analysis->sites[part].runtime != nullptr; });
    if (residue && !group.parts.empty()) group.runtime = analysis->sites[group.parts[0]].runtime;
    const SiteReport* lost_part = nullptr;
    bool lost_residue_only = true;
    for (uint32_t part : group.parts) {
      const SiteReport& site = analysis->sites[part];
      if (!site.lost.any()) continue;
      if (site.lost_runtime == nullptr) lost_residue_only = false;
      if (lost_part == nullptr) lost_part = &site;
    }
    if (lost_part != nullptr && lost_residue_only) group.lost_runtime = lost_part->lost_runtime;
  }
  for (size_t g = 0; g < analysis->groups.size(); ++g) {
    const GroupReport& group = analysis->groups[g];
    if (group.verdict != Verdict::kLeak && group.lost.any() && group.lost_runtime == nullptr) {
      analysis->lost_groups.push_back(g);
    }
  }
  std::stable_sort(analysis->lost_groups.begin(), analysis->lost_groups.end(), [&](size_t a, size_t b) {
    return analysis->groups[a].lost.total_bytes() > analysis->groups[b].lost.total_bytes();
  });
  build_peak_holders(*analysis, &analysis->peak, peak, keys);
  build_peak_holders(*analysis, &analysis->device_peak, device_peak.held, keys);
  std::sort(analysis->device_peaks.begin(), analysis->device_peaks.end(),
            [](const DevicePeak& a, const DevicePeak& b) { return a.device < b.device; });

  set_owners(*analysis, owner_sums(*analysis));
  analysis->residency = series.process();
  if (!analysis->residency.empty()) analysis->residency.back().tracked_bytes = analysis->live_bytes_by_domain;
  analysis->findings = untracked_growth(analysis->residency);
  return analysis;
}

OwnerSums owner_sums(const RunAnalysis& analysis, bool share_growth) {
  // Live bytes now are those of the judged sites (a teardown mark may take some from the
  // snapshots before it). An owner grows at its part of the program's leaks: each leak's growth
  // shared out as its live bytes are. A pool's workers that each hold a part of one leak each grow,
  // however the entries of a cache they share move between them; a thread that fills a cache
  // does not.
  OwnerSums sums;
  // Owners are those live at some sample (set_owners()): only they have a series.
  for (const std::string& name : analysis.series->task_names()) sums.tasks[name].series = analysis.series->task(name);
  for (uint32_t thread : analysis.series->thread_indexes()) sums.threads[thread].series = analysis.series->thread(thread);
  for (const SiteReport& site : analysis.sites) {
    if (!counts_for_owners(site)) continue;
    const CapturedSite& taken = analysis.capture_of(site);
    analysis.captures.for_each_task(taken, [&](const std::string& name, int64_t bytes, int64_t) { sums.tasks[name].bytes += bytes; });
    analysis.captures.for_each_thread(taken, [&](uint32_t thread, int64_t bytes, int64_t) { sums.threads[thread].bytes += bytes; });
  }
  if (!share_growth) return sums;
  for (const GroupReport& group : analysis.groups) {
    if (group.verdict != Verdict::kLeak || group.runtime != nullptr || group.summed != nullptr) continue;
    OwnedBytes owned;
    for (uint32_t part : group.parts) {
      const SiteReport& site = analysis.sites[part];
      if (!counts_for_owners(site)) continue;
      const CapturedSite& taken = analysis.capture_of(site);
      owned.bytes += taken.live_bytes;
      analysis.captures.for_each_task(taken, [&](const std::string& name, int64_t bytes, int64_t) { owned.by_task[name] += bytes; });
      analysis.captures.for_each_thread(taken, [&](uint32_t thread, int64_t bytes, int64_t) { owned.by_thread[thread] += bytes; });
    }
    sums.share(group.growth_bytes_per_min, owned);
  }
  return sums;
}

bool counts_for_owners(const SiteReport& site) { return !site.from_leak_check && site.runtime != kCachingAllocatorReserve; }

void OwnerSums::share(double growth_bytes_per_min, const OwnedBytes& owned) {
  if (owned.bytes <= 0) return;
  double growth = std::max(growth_bytes_per_min, 0.0);
  leaks_growth.add(growth);
  // One term per owner and leak, whichever way the leak's sites were read.
  double per_byte = growth / static_cast<double>(owned.bytes);
  for (const auto& [name, bytes] : owned.by_task) tasks[name].growth.add(per_byte * static_cast<double>(bytes));
  for (const auto& [thread, bytes] : owned.by_thread) threads[thread].growth.add(per_byte * static_cast<double>(bytes));
}

void OwnerSums::add(const OwnerSums& other) {
  auto add_all = [](auto& owners, const auto& others) {
    for (const auto& [key, held] : others) {
      Held& sum = owners[key];
      sum.bytes += held.bytes;
      sum.growth.add(held.growth);
      add_series(&sum.series, held.series);
    }
  };
  add_all(tasks, other.tasks);
  add_all(threads, other.threads);
  leaks_growth.add(other.leaks_growth);
}

void set_owners(RunAnalysis& analysis, const OwnerSums& sums) {
  auto owner_of = [&](const OwnerSums::Held& held) {
    OwnerReport owner;
    owner.live_bytes = held.bytes;
    owner.mann_kendall_z = owner_trend(held.series);
    owner.growth_bytes_per_min = held.growth.bytes_per_min();
    // A block or two of a leak held by a thread that is not the one leaking is not its growth.
    owner.growing = owner.growth_bytes_per_min > 0 &&
                    owner.growth_bytes_per_min >= kLeastOwnerShare * sums.leaks_growth.bytes_per_min();
    if (!owner.growing) owner.growth_bytes_per_min = 0;
    return owner;
  };
  analysis.by_task.clear();
  analysis.by_thread.clear();
  for (const auto& [name, held] : sums.tasks) {
    if (held.series.empty()) continue;
    OwnerReport owner = owner_of(held);
    owner.name = name;
    analysis.by_task.push_back(owner);
  }
  for (const auto& [thread, held] : sums.threads) {
    if (held.series.empty()) continue;
    OwnerReport owner = owner_of(held);
    owner.name = analysis.state.threads()[thread].name;
    owner.tid = analysis.state.threads()[thread].tid;
    analysis.by_thread.push_back(owner);
  }
  sort_by_live_bytes(analysis.by_task);
  sort_by_live_bytes(analysis.by_thread);
}

ReportSection section_of(const GroupReport& group) {
  switch (group.verdict) {
    case Verdict::kLeak:
      // The runtime's own residue that grows is no leak of the program's; a caching allocator's
      // reserve is the program's device memory.
      return group.runtime != nullptr && group.runtime != kCachingAllocatorReserve ? ReportSection::kRuntimeGrowing
                                                                                  : ReportSection::kLeaks;
    case Verdict::kCache: return ReportSection::kCaches;
    case Verdict::kStartup: return ReportSection::kStartup;
    case Verdict::kUnknown: break;
  }
  return ReportSection::kNotJudged;
}

void count_in_sections(const GroupReport& group, int64_t min_bytes, SectionCounts* counts) {
  if (group.live_bytes < min_bytes) return;
  ReportSection section = section_of(group);
  SectionCount& count = (*counts)[static_cast<size_t>(section)];
  if (section == ReportSection::kNotJudged && group.live_bytes == 0 && group.live_blocks > 0) {
    ++count.empty_groups;
    count.empty_blocks += group.live_blocks;
    return;
  }
  ++count.groups;
}

SampledPrecision sampled_precision(const RunAnalysis& analysis, const GroupReport& group) {
  if (group.summed != nullptr) return precision_of(group.summed->precision);
  PrecisionSum sum;
  for (uint32_t part : group.parts) add_precision(analysis, analysis.sites[part], &sum);
  return precision_of(sum);
}

std::vector<SeriesPoint> group_series(const RunAnalysis& analysis, const GroupReport& group) {
  if (group.summed != nullptr) return group.summed->series;
  std::vector<SeriesPoint> sum = group.gone_series;
  for (uint32_t part : group.parts) add_series(&sum, site_series(analysis, analysis.sites[part]));
  return sum;
}

size_t group_site_count(const GroupReport& group) { return group.summed != nullptr ? group.summed->sites() : group.parts.size(); }

int64_t RunAnalysis::own_live_bytes(const SiteReport& site) const {
  const CapturedSite& taken = capture_of(site);
  if (site.runtime != kCachingAllocatorReserve) return taken.live_bytes;
  auto inner = inner_bytes.find(taken.site);
  return inner == inner_bytes.end() ? taken.live_bytes : std::max<int64_t>(0, taken.live_bytes - inner->second);
}

int64_t freed_at_exit_bytes(const RunAnalysis& analysis, const SiteReport& site) {
  if (site.from_leak_check || analysis.at.index >= analysis.state.snapshot_count()) return 0;
  const CapturedSite& taken = analysis.capture_of(site);
  return std::max<int64_t>(0, taken.live_bytes - analysis.state.sites()[taken.site].live_bytes);
}

SiteJudgement site_judgement(const RunAnalysis& analysis, size_t index) {
  const SiteReport& site = analysis.sites[index];
  if (!site.from_leak_check) return judge_site(site_evidence(analysis, site));
  SiteJudgement judgement;
  judgement.reason = fmt::format("not live at the judged snapshot; it lost blocks {}", leak_check_when(*analysis.state.leak_check()));
  return judgement;
}

void add_part_ages(const RunAnalysis& analysis, const SiteReport& site, PartAges* ages) {
  if (ages->unknown) return;
  if (site.from_leak_check) {
    ages->unknown = true;
    return;
  }
  const CapturedSite& taken = analysis.capture_of(site);
  LifetimeHistogram::Buckets lifetimes = analysis.captures.lifetimes(taken);
  int longest = -1;  // the largest lifetime bucket holding freed bytes
  for (int bucket = internal::kLifetimeBuckets - 1; bucket >= 0 && longest < 0; --bucket) {
    if (lifetimes[static_cast<size_t>(bucket)] > 0) longest = bucket;
  }
  if (longest < 0) return;
  if (longest == internal::kLifetimeBuckets - 1) {
    ages->unknown = true;
    return;
  }
  ages->freed = true;
  // Bucket b holds lifetimes of [2^(b-1), 2^b) epochs, bucket 0 those freed in their own epoch.
  uint32_t lifetime = longest == 0 ? 0 : (1u << longest) - 1;
  // The part as of the snapshot it is taken from (before a shutdown, for some).
  uint32_t epoch = analysis.state.epoch_closed_at(taken.taken_s);
  if (epoch == 0) {
    ages->unknown = true;
    return;
  }
  if (epoch <= lifetime) return;
  // Older: born in an epoch before epoch - lifetime, which began when the snapshot before it was taken.
  double bin_s = static_cast<double>(analysis.state.birth_bin_ns()) / 1e9;
  double older_before_s = static_cast<double>(analysis.state.epoch_start_ns(epoch - lifetime)) / 1e9;
  for (const LiveByBirth& birth : analysis.captures.births(taken)) {
    if (birth.birth_s + bin_s <= older_before_s) ages->older += birth.bytes;
  }
}

int64_t older_than_freed_bytes(const RunAnalysis& analysis, const GroupReport& group) {
  // Each part against what it freed itself: a part that frees nothing is no cache's turnover, and
  // is not measured against another's (a map's nodes against the bucket arrays each rehash frees).
  if (group.summed != nullptr) return group.summed->ages.bytes();
  PartAges ages;
  for (uint32_t part : group.parts) add_part_ages(analysis, analysis.sites[part], &ages);
  return ages.bytes();
}

int64_t shown_older_than_freed_bytes(const RunAnalysis& analysis, const GroupReport& group) {
  if (group.verdict != Verdict::kLeak) return -1;
  int64_t older = older_than_freed_bytes(analysis, group);
  return older > 0 && older < group.live_bytes ? older : -1;
}

SiteJudgement group_judgement(const RunAnalysis& analysis, size_t index) {
  return group_judgement_of(analysis, analysis.groups[index]);
}

VerdictCounts verdict_counts(const RunAnalysis& analysis) {
  VerdictCounts counts;
  for (const GroupReport& group : analysis.groups) ++counts.groups[static_cast<size_t>(verdict_rank(group.verdict))];
  for (const SiteReport& site : analysis.sites) ++counts.sites[static_cast<size_t>(verdict_rank(site.verdict))];
  return counts;
}

uint32_t group_id(const RunAnalysis& analysis, size_t index) {
  const GroupReport& group = analysis.groups[index];
  if (group.summed != nullptr) return group.summed->parts[0].site;  // a read may hold some of its sites but not the largest
  return analysis.state.stream_site_id(analysis.capture_of(analysis.sites[group.parts[0]]).site);
}

SiteSummary site_summary(const RunAnalysis& analysis, size_t index) {
  SiteSummary summary = analysis.captures.summary(analysis.state, analysis.capture_of(analysis.sites[index]));
  summary.site = analysis.state.stream_site_id(summary.site);  // a report names sites as the stream does
  return summary;
}

SiteDetail site_detail(const RunAnalysis& analysis, size_t index) {
  const SiteReport& site = analysis.sites[index];
  SiteDetail detail;
  detail.summary = site_summary(analysis, index);
  detail.judgement = site_judgement(analysis, index);
  detail.first_seen_s = first_seen_s(analysis.state, analysis.capture_of(site).site);
  if (!site.from_leak_check) detail.median_age_s = analysis.now_s * (1 - detail.judgement.median_birth_fraction);
  detail.freed_bytes_by_lifetime = analysis.captures.lifetimes(analysis.capture_of(site));
  detail.freed_at_exit_bytes = freed_at_exit_bytes(analysis, site);
  detail.group = site.group;
  detail.from_leak_check = site.from_leak_check;
  detail.lost = site.lost;
  return detail;
}

}  // namespace leakscope::report
