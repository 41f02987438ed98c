#include "report/analysis.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "report/device_layers.h"
#include "report/site_format.h"
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

// joint_phase() is the phase of a group whose parts were made in `a` and `b`: none unless both
// were made in one.
StartupPhase joint_phase(StartupPhase a, StartupPhase b) {
  if (a == StartupPhase::kNone || b == StartupPhase::kNone) return StartupPhase::kNone;
  return a == b ? a : StartupPhase::kSeveral;
}

// Untracked growth must be at least this share of RSS growth, and this fast, to be reported.
constexpr double kMinUntrackedShare = 0.5;
constexpr double kMinUntrackedBytesPerMin = 256 * 1024;
// The least unexplained growth over the samples' span: in a run of a few seconds, the pages its
// threads and libraries touch for the first time grow anonymous memory by some KiB at rates that
// pass the one above.
constexpr double kMinUntrackedBytes = 1 << 20;

int verdict_rank(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLeak: return 0;
    case Verdict::kCache: return 1;
    case Verdict::kStartup: return 2;
    case Verdict::kUnknown: return 3;
  }
  return 3;
}

// Leaks first by growth rate, then caches, startup residents and unknown sites by live bytes.
bool ranks_before(const SiteJudgement& a, int64_t a_bytes, const SiteJudgement& b, int64_t b_bytes) {
  int rank_a = verdict_rank(a.verdict), rank_b = verdict_rank(b.verdict);
  if (rank_a != rank_b) return rank_a < rank_b;
  if (rank_a == 0 && a.growth_bytes_per_min != b.growth_bytes_per_min) return a.growth_bytes_per_min > b.growth_bytes_per_min;
  return a_bytes > b_bytes;
}

// owner_report() judges what one task name or thread owns: growing when the floor of its live
// bytes trends up over the run; its rate is that of the run's later half, so a finished load at
// the start does not inflate the rate of what grows now.
OwnerReport owner_report(const std::vector<SeriesPoint>& points) {
  OwnerReport owner;
  if (points.empty()) return owner;
  owner.live_bytes = static_cast<int64_t>(points.back().value);
  std::vector<SeriesPoint> floor = live_floor(points);
  double half = points.back().time_s - (points.back().time_s - points.front().time_s) / 2;
  auto later = std::lower_bound(floor.begin(), floor.end(), half,
                                [](const SeriesPoint& point, double time) { return point.time_s < time; });
  owner.growth_bytes_per_min = theil_sen_slope(floor.end() - later >= 2 ? std::vector<SeriesPoint>(later, floor.end()) : floor) * 60;
  owner.mann_kendall_z = mann_kendall(floor).z;
  owner.growing = owner.mann_kendall_z >= kTrendZ && owner.growth_bytes_per_min > 0;
  return owner;
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

// sum_series() adds series that share one time grid (LiveSeries tracks all end at its last
// sample), aligned at their ends.
std::vector<SeriesPoint> sum_series(const std::vector<std::vector<SeriesPoint>>& parts) {
  std::vector<SeriesPoint> sum;
  for (const std::vector<SeriesPoint>& part : parts) {
    if (part.size() > sum.size()) {
      std::vector<SeriesPoint> longer(part.begin(), part.begin() + static_cast<long>(part.size() - sum.size()));
      for (SeriesPoint& point : longer) point.value = 0;
      longer.insert(longer.end(), sum.begin(), sum.end());
      sum = std::move(longer);
    }
    size_t offset = sum.size() - part.size();
    for (size_t i = 0; i < part.size(); ++i) sum[offset + i].value += part[i].value;
  }
  return sum;
}

// site_series() is a site's live bytes over time; a site taken from a snapshot before a
// main-return mark ends at the value it had there, at the mark: the snapshots between, taken
// while main's locals were being destroyed, are left out.
std::vector<SeriesPoint> site_series(const LiveSeries& series, const SiteReport& site) {
  std::vector<SeriesPoint> points = series.site(site.summary.site);
  if (!site.from_earlier || points.empty()) return points;
  SeriesPoint mark = points.back();
  while (!points.empty() && points.back().time_s > site.taken_s) points.pop_back();
  mark.value = static_cast<double>(site.summary.live_bytes);
  points.push_back(mark);
  return points;
}

// What names a site to a person, and which sites are one group: its first user frame and the user
// frame that called it (a helper shared by a bounded cache and an unbounded one is two groups);
// without a user frame by function, a frame of the innermost run of frames in the program's own
// modules (a lambda's std::function invoker in a binary without debug info); failing that, the
// innermost frame, and the site is a group of its own.
struct SiteKey {
  std::string key;
  bool has_user_frame = false;
  SymbolizedFrame frame;
};

std::string frame_identity(const SymbolizedFrame& frame) {
  return frame.function.empty() ? fmt::format("{}+{:#x}", frame.module, frame.module_offset)
                                : fmt::format("{}|{}|{}:{}", frame.module, frame.function, frame.file, frame.line);
}

class SiteKeys {
 public:
  SiteKeys(const RunState& state, Symbolizer& symbolizer, const FrameRoles& roles)
      : state_(state), symbolizer_(symbolizer), roles_(roles) {}

  const SiteKey& of(uint32_t site) {
    auto found = keys_.find(site);
    if (found != keys_.end()) return found->second;
    SiteKey key;
    uint32_t stack = state_.sites()[site].stack;
    std::vector<SymbolizedFrame> user = symbolizer_.find_frames(
        stack, 2, [this](const std::string& path) { return roles_.is_framework_module(path); },
        [this](const SymbolizedFrame& frame) { return roles_.is_user(frame); });
    if (!user.empty() && FrameRoles::is_generated_python(user[0])) {
      user = roles_.user_frames(symbolizer_.stack(stack), 2);  // rare: the whole stack decides
    }
    if (!user.empty()) {
      key.has_user_frame = true;
      key.frame = user[0];
      key.key = "user|" + frame_identity(user[0]) + (user.size() > 1 ? "|" + frame_identity(user[1]) : "");
    } else if (std::optional<SymbolizedFrame> own = outermost_of_own_run(stack)) {
      key.has_user_frame = true;
      key.frame = *own;
      key.key = "own|" + frame_identity(*own);
    } else {
      std::vector<SymbolizedFrame> frames = symbolizer_.stack(stack);
      if (!frames.empty()) key.frame = frames[0];
      key.key = fmt::format("site {}", site);
    }
    return keys_.emplace(site, std::move(key)).first->second;
  }

 private:
  // outermost_of_own_run() is, in the innermost run of frames in one of the program's modules, the
  // first that names a lambda (the task a std::function runs), or else the run's outermost frame.
  std::optional<SymbolizedFrame> outermost_of_own_run(uint32_t stack) {
    std::optional<SymbolizedFrame> own;
    symbolizer_.visit_frames(stack, [&](const SymbolizedFrame& frame) {
      bool framework = roles_.is_framework_module(frame.module);
      if (own && (framework || frame.module != own->module)) return false;
      if (framework) return true;
      own = frame;
      return frame.function.find("{lambda") == std::string::npos;
    });
    return own;
  }

  const RunState& state_;
  Symbolizer& symbolizer_;
  const FrameRoles& roles_;
  std::unordered_map<uint32_t, SiteKey> keys_;
};

// What the reading pass keeps of the peak: the host sites live there.
struct PeakCapture {
  std::vector<std::pair<uint32_t, int64_t>> sites;
};

// What the reading pass keeps of the sites that lost blocks at the last leak check, as they were
// in its snapshot: one that is not live at the judged snapshot is still reported.
std::vector<JudgedSite> lost_sites_at_check(const RunState& state) {
  std::unordered_map<uint32_t, LostFigures> lost = lost_by_site(state);
  std::vector<JudgedSite> sites = live_sites(state);
  std::erase_if(sites, [&](const JudgedSite& site) { return lost.count(site.summary.site) == 0; });
  return sites;
}

void capture_peak(const RunState& state, PeakReport* peak, PeakCapture* capture) {
  int64_t tracked = host_bytes(state.live_bytes_by_domain());
  if (tracked <= peak->tracked_bytes) return;
  peak->snapshot = state.snapshot_count();
  peak->time_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  peak->tracked_bytes = tracked;
  capture->sites.clear();
  const auto& sites = state.sites();
  for (size_t id = 1; id < sites.size(); ++id) {
    if (sites[id].known && sites[id].live_bytes > 0 && is_host_domain(sites[id].domain)) {
      capture->sites.emplace_back(static_cast<uint32_t>(id), sites[id].live_bytes);
    }
  }
}

}  // namespace

std::vector<SeriesPoint> group_series(const RunAnalysis& analysis, const GroupReport& group) {
  std::vector<std::vector<SeriesPoint>> parts;
  for (size_t part : group.parts) parts.push_back(site_series(*analysis.series, analysis.sites[part]));
  return parts.size() == 1 ? parts[0] : sum_series(parts);
}

namespace {

// settle_reserve() judges a caching allocator's reserve: what grows there is tensors (judged at
// their own c10_cuda sites) or the cache growing to what requests ask, never a leak of its own.
void settle_reserve(SiteJudgement* judgement) {
  if (judgement->verdict != Verdict::kLeak) return;
  judgement->verdict = Verdict::kCache;
  judgement->reason = "the caching allocator's reserve grows with what requests ask of it; the tensors it holds are "
                      "judged at their own sites (c10_cuda)";
}

// build_groups() gathers the (sorted) sites by their first user frame and judges each group on
// the sum of its parts.
void build_groups(RunAnalysis& analysis, const LiveSeries& series, SiteKeys& keys, double now_s, uint32_t epochs) {
  std::unordered_map<std::string, size_t> by_key;
  std::vector<GroupReport> groups;
  for (size_t i = 0; i < analysis.sites.size(); ++i) {
    SiteReport& site = analysis.sites[i];
    const SiteKey& key = keys.of(site.summary.site);
    // The driver's memory is a layer beneath the program's objects: never one group with them.
    auto [found, inserted] = by_key.emplace(is_driver_domain(site.summary.domain) ? key.key + "\n(driver)" : key.key, groups.size());
    if (inserted) {
      GroupReport group;
      group.has_user_frame = key.has_user_frame;
      group.user_frame = key.frame;
      uint32_t stack = site.summary.stack;
      group.cut_at_depth = !key.has_user_frame && stack < analysis.state.stacks().size() &&
                           analysis.state.stacks()[stack].depth >= analysis.state.process().depth;
      group.first_seen_s = site.first_seen_s;
      groups.push_back(std::move(group));
    }
    GroupReport& group = groups[found->second];
    group.parts.push_back(i);
    group.live_bytes += site.summary.live_bytes;
    group.live_blocks += site.summary.live_blocks;
    group.inner_bytes += site.summary.inner_bytes;
    group.allocations += site.summary.allocations;
    group.temporary_allocations += site.summary.temporary_allocations;
    group.freed_at_exit_bytes += site.freed_at_exit_bytes;
    group.lost += site.lost;
    group.first_seen_s = std::min(group.first_seen_s, site.first_seen_s);
    site.group = found->second;
  }
  for (GroupReport& group : groups) {
    std::sort(group.parts.begin(), group.parts.end(), [&](size_t a, size_t b) {
      return analysis.sites[a].summary.live_bytes != analysis.sites[b].summary.live_bytes
                 ? analysis.sites[a].summary.live_bytes > analysis.sites[b].summary.live_bytes
                 : a < b;
    });
    bool reserve = std::all_of(group.parts.begin(), group.parts.end(),
                               [&](size_t part) { return analysis.sites[part].runtime == kCachingAllocatorReserve; });
    if (group.parts.size() == 1) {
      group.judgement = analysis.sites[group.parts[0]].judgement;
      if (reserve) settle_reserve(&group.judgement);
      continue;
    }
    std::vector<std::vector<SeriesPoint>> series_parts;
    SiteEvidence evidence;
    evidence.made_during = analysis.sites[group.parts[0]].made_during;
    for (size_t part : group.parts) {
      const SiteReport& site = analysis.sites[part];
      evidence.made_during = joint_phase(evidence.made_during, site.made_during);
      series_parts.push_back(site_series(series, site));
      evidence.births.insert(evidence.births.end(), site.summary.births.begin(), site.summary.births.end());
    }
    evidence.live_bytes = sum_series(series_parts);
    evidence.now_s = now_s;
    evidence.epochs = epochs;
    evidence.allocations = group.allocations;
    evidence.live_blocks = group.live_blocks;
    group.judgement = judge_site(evidence);
    if (reserve) settle_reserve(&group.judgement);
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranks_before(groups[a].judgement, groups[a].live_bytes, groups[b].judgement, groups[b].live_bytes);
  });
  std::vector<size_t> new_index(groups.size());
  analysis.groups.reserve(groups.size());
  for (size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    analysis.groups.push_back(std::move(groups[order[i]]));
  }
  for (SiteReport& site : analysis.sites) site.group = new_index[site.group];
}

void build_peak_holders(RunAnalysis& analysis, const PeakCapture& capture, SiteKeys& keys) {
  std::map<std::string, size_t> by_key;
  std::vector<PeakReport::Holder>& holders = analysis.peak.holders;
  for (const auto& [site, bytes] : capture.sites) {
    const SiteKey& key = keys.of(site);
    auto [found, inserted] = by_key.emplace(key.key, holders.size());
    if (inserted) {
      holders.push_back({frame_name(key.frame, 40), 0, SIZE_MAX});
    }
    holders[found->second].bytes += bytes;
  }
  std::unordered_map<std::string, size_t> group_by_key;
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    group_by_key.emplace(keys.of(analysis.sites[analysis.groups[g].parts[0]].summary.site).key, g);
  }
  for (const auto& [key, index] : by_key) {
    auto group = group_by_key.find(key);
    if (group != group_by_key.end()) holders[index].group = group->second;
  }
  std::stable_sort(holders.begin(), holders.end(),
                   [](const PeakReport::Holder& a, const PeakReport::Holder& b) { return a.bytes > b.bytes; });
}

}  // namespace

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
  if (finding.mann_kendall_z >= kTrendZ && finding.rss_growth_bytes_per_min > 0 &&
      finding.untracked_growth_bytes_per_min >= kMinUntrackedShare * finding.rss_growth_bytes_per_min &&
      finding.untracked_growth_bytes_per_min >= kMinUntrackedBytesPerMin &&
      finding.untracked_growth_bytes_per_min * (samples.back().time_s - samples.front().time_s) / 60 >= kMinUntrackedBytes) {
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
  auto analysis = std::make_unique<RunAnalysis>();
  std::vector<SnapshotMark> marks = reader.skim_snapshots();
  analysis->at = choose_snapshot(options.at, marks, reader.path());
  uint32_t judged = analysis->at.index;
  analysis->series = std::make_unique<LiveSeries>();
  LiveSeries& series = *analysis->series;
  JudgedCapture capture(analysis->at);
  PeakCapture peak;
  std::vector<JudgedSite> lost_at_check;
  read_run(reader, 0, &analysis->state, [&](const RunState& state) {
    const SnapshotInfo& info = state.last_snapshot();
    analysis->peak_program_rss_bytes =
        std::max(analysis->peak_program_rss_bytes, info.rss_bytes - std::min(info.rss_bytes, info.overhead_bytes));
    if (state.leak_check() && state.leak_check()->snapshot == state.snapshot_count()) {
      lost_at_check = lost_sites_at_check(state);
    }
    if (state.snapshot_count() > judged) return;
    series.observe(state);
    capture_peak(state, &analysis->peak, &peak);
    capture.observe(state);
    if (capture.done()) series.finish(state);
  });
  analysis->damaged_spans = reader.damaged().size();
  const RunState& state = analysis->state;
  if (state.snapshot_count() < judged) {
    // The skim saw more snapshots than the full read could use (a frame it did not check).
    throw StreamError(fmt::format("{}: snapshot {} could not be read", reader.path(), judged));
  }
  analysis->judged = capture.info();
  analysis->live_bytes_by_domain = capture.live_bytes_by_domain();
  analysis->devices = capture.devices();
  std::vector<JudgedSite> judged_sites = capture.take_sites();
  analysis->sites.reserve(judged_sites.size());  // a stack-heavy run judges a few hundred thousand
  for (JudgedSite& judged_site : judged_sites) {
    SiteReport site;
    site.first_seen_s = judged_site.first_seen_s;
    site.freed_bytes_by_lifetime = judged_site.freed_bytes_by_lifetime;
    site.from_earlier = judged_site.from_earlier;
    site.taken_s = judged_site.taken_s;
    site.summary = std::move(judged_site.summary);
    analysis->sites.push_back(std::move(site));
  }
  judged_sites = {};
  if (analysis->at.teardown != 0) {
    analysis->teardown.mark = analysis->at.teardown;
    analysis->teardown.begin_s = static_cast<double>(marks[analysis->at.teardown - 1].time_ns) / 1e9;
    analysis->teardown.end_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  }
  if (judged < state.snapshot_count()) {
    for (SiteReport& site : analysis->sites) {
      site.freed_at_exit_bytes = std::max<int64_t>(0, site.summary.live_bytes - state.sites()[site.summary.site].live_bytes);
      analysis->teardown.freed_bytes += site.freed_at_exit_bytes;
    }
  }
  std::unordered_map<uint32_t, LostFigures> lost = lost_by_site(state);
  if (!lost.empty()) {
    std::unordered_map<uint32_t, size_t> judged_index;
    for (size_t i = 0; i < analysis->sites.size(); ++i) judged_index.emplace(analysis->sites[i].summary.site, i);
    for (JudgedSite& at_check : lost_at_check) {
      if (judged_index.count(at_check.summary.site) != 0) continue;
      SiteReport site;
      site.first_seen_s = at_check.first_seen_s;
      site.freed_bytes_by_lifetime = at_check.freed_bytes_by_lifetime;
      site.taken_s = at_check.taken_s;
      site.from_leak_check = true;
      site.summary = std::move(at_check.summary);
      analysis->sites.push_back(std::move(site));
    }
    for (SiteReport& site : analysis->sites) {
      auto found = lost.find(site.summary.site);
      if (found != lost.end()) site.lost = found->second;
    }
  }
  lost_at_check = {};

  analysis->symbolizer = std::make_unique<Symbolizer>(state);
  analysis->roles = FrameRoles(options.fold, state.process().exe);
  double now_s = static_cast<double>(capture.info().time_ns) / 1e9;
  for (SiteReport& site : analysis->sites) {
    site.made_during = startup_phase_of(state, *analysis->symbolizer, site.summary.stack);
    if (site.from_leak_check) {
      site.judgement.reason = fmt::format("not live at the judged snapshot; it lost blocks {}",
                                          leak_check_when(*state.leak_check()));
      continue;
    }
    SiteEvidence evidence;
    evidence.live_bytes = site_series(series, site);
    evidence.births = site.summary.births;
    evidence.now_s = now_s;
    evidence.epochs = capture.epochs();
    evidence.allocations = site.summary.allocations;
    evidence.live_blocks = site.summary.live_blocks;
    evidence.made_during = site.made_during;
    evidence.over_budget = state.is_marker_stack(site.summary.stack, internal::kOverBudgetFrame);
    site.judgement = judge_site(evidence);
    site.median_age_s = now_s * (1 - site.judgement.median_birth_fraction);
  }
  std::stable_sort(analysis->sites.begin(), analysis->sites.end(), [](const SiteReport& a, const SiteReport& b) {
    return ranks_before(a.judgement, a.summary.live_bytes, b.judgement, b.summary.live_bytes);
  });
  SiteKeys keys(state, *analysis->symbolizer, analysis->roles);
  // Residue is known before groups are judged: a caching allocator's reserve is judged as one.
  for (SiteReport& site : analysis->sites) {
    const std::vector<SymbolizedFrame>& frames = analysis->symbolizer->stack(site.summary.stack);
    site.runtime = runtime_residue(frames);
    if (site.runtime == nullptr) site.runtime = caching_allocator_reserve(analysis->state, site.summary, frames);
    if (site.lost.any()) site.lost_runtime = lost_residue(frames, analysis->roles);
  }
  build_groups(*analysis, series, keys, now_s, capture.epochs());
  for (GroupReport& group : analysis->groups) {
    bool residue = std::all_of(group.parts.begin(), group.parts.end(),
                               [&](size_t part) { return analysis->sites[part].runtime != nullptr; });
    if (residue && !group.parts.empty()) group.runtime = analysis->sites[group.parts[0]].runtime;
    const SiteReport* lost_part = nullptr;
    bool lost_residue_only = true;
    for (size_t part : group.parts) {
      const SiteReport& site = analysis->sites[part];
      if (!site.lost.any()) continue;
      if (site.lost_runtime == nullptr) lost_residue_only = false;
      if (lost_part == nullptr) lost_part = &site;
    }
    if (lost_part != nullptr && lost_residue_only) group.lost_runtime = lost_part->lost_runtime;
  }
  for (size_t g = 0; g < analysis->groups.size(); ++g) {
    const GroupReport& group = analysis->groups[g];
    if (group.judgement.verdict != Verdict::kLeak && group.lost.any() && group.lost_runtime.empty()) {
      analysis->lost_groups.push_back(g);
    }
  }
  std::stable_sort(analysis->lost_groups.begin(), analysis->lost_groups.end(), [&](size_t a, size_t b) {
    return analysis->groups[a].lost.total_bytes() > analysis->groups[b].lost.total_bytes();
  });
  build_peak_holders(*analysis, peak, keys);

  // Live bytes now are those of the judged sites (a main-return mark may take some from the
  // snapshot before it); the trends are the series'.
  std::map<std::string, int64_t> task_bytes;
  std::map<uint32_t, int64_t> thread_bytes;
  for (const SiteReport& site : analysis->sites) {
    if (site.from_leak_check) continue;
    for (const TaskShare& share : site.summary.tasks) task_bytes[share.name] += share.live_bytes;
    for (const ThreadShare& share : site.summary.threads) thread_bytes[share.thread] += share.live_bytes;
  }
  for (const std::string& name : series.task_names()) {
    OwnerReport owner = owner_report(series.task(name));
    owner.name = name;
    owner.live_bytes = task_bytes[name];
    analysis->by_task.push_back(owner);
  }
  for (uint32_t thread : series.thread_indexes()) {
    OwnerReport owner = owner_report(series.thread(thread));
    owner.name = state.threads()[thread].name;
    owner.tid = state.threads()[thread].tid;
    owner.live_bytes = thread_bytes[thread];
    analysis->by_thread.push_back(owner);
  }
  sort_by_live_bytes(analysis->by_task);
  sort_by_live_bytes(analysis->by_thread);
  analysis->residency = series.process();
  if (!analysis->residency.empty()) analysis->residency.back().tracked_bytes = analysis->live_bytes_by_domain;
  analysis->findings = untracked_growth(analysis->residency);
  return analysis;
}

}  // namespace leakscope::report
