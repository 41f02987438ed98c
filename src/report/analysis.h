// File: analysis.h
//
// One pass over a stream that yields everything `leakscope report` and `diff` show, judged at the
// snapshot --at chooses (by default the last one before teardown, report/snapshot_choice.h):
// every site live there with its verdict and the numbers behind it; the sites gathered into
// groups by their first user frame, each with one verdict; what teardown freed; when tracked bytes
// peaked and who held them; the process's memory over time beside tracked bytes, and residency
// findings (RSS growth that tracked allocations do not explain). Memory is bounded by the number
// of sites and live (triple, epoch) pairs, not by the stream's length, and a site costs a fixed
// record: names, frames, whole judgements and series are made only for what is shown. Within a
// budget of sites (AnalysisOptions::site_memory), a stream with more is read in parts that each
// hold whole groups, and only the groups a report shows are kept (report/report_passes.h). The
// rules are in docs/ANALYSIS.md.
#ifndef LEAKSCOPE_REPORT_ANALYSIS_H_
#define LEAKSCOPE_REPORT_ANALYSIS_H_

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/frame_roles.h"
#include "report/leak_check.h"
#include "report/live_series.h"
#include "report/run_state.h"
#include "report/site_capture.h"
#include "report/site_summary.h"
#include "report/snapshot_choice.h"
#include "report/symbolizer.h"
#include "report/verdict.h"

namespace leakscope::report {

struct RunAnalysis;
struct GroupSums;  // report/group_sums.h
// The groups of a read in parts summed over several reads, by GroupReport::identity.
using SummedGroups = std::unordered_map<uint64_t, GroupSums>;

// SiteReport: one judged site, a fixed record. What only a shown site needs (its owners and
// births by name, its whole judgement) is made for it by site_detail().
struct SiteReport {
  uint32_t captured = 0;  // in RunAnalysis::captured: its counters as taken, and where its details are
  uint32_t group = 0;     // index in RunAnalysis::groups
  Verdict verdict = Verdict::kUnknown;            // its own judgement's (site_judgement())
  StartupPhase made_during = StartupPhase::kNone;  // the start-up phase it was made in (SiteEvidence)
  // Not live at the judged snapshot, but lost at the leak check: taken from the scan's snapshot,
  // and not judged.
  bool from_leak_check = false;
  double growth_bytes_per_min = 0;  // its own judgement's: leaks rank by it
  const char* runtime = nullptr;  // why it is the runtime's own residue (runtime_residue()), or null
  const char* lost_runtime = nullptr;  // why what it lost is the runtime's own (lost_residue()), or null
  LostFigures lost;  // at the leak check; 0 when reachable or not scanned
};

// One site whole, as a report shows it.
struct SiteDetail {
  SiteSummary summary;  // as taken
  SiteJudgement judgement;
  double first_seen_s = 0;
  double median_age_s = 0;  // half of the live bytes are at least this old
  LifetimeHistogram::Buckets freed_bytes_by_lifetime{};
  int64_t freed_at_exit_bytes = 0;
  size_t group = 0;
  bool from_leak_check = false;
  LostFigures lost;
};

// The sites that share one first user frame: one bug, one answer. Its judgement is on the sum of
// its parts' series and births; group_judgement() makes it whole for a group that is shown.
struct GroupReport {
  // Their first user frame, when they have one, else the innermost: the symbolizer's, never null.
  const SymbolizedFrame* user_frame = nullptr;
  bool has_user_frame = false;
  // The user frame that called it, when another group has the same first user frame (a helper
  // shared by a bounded cache and an unbounded one is two groups, told apart by it); else null.
  const SymbolizedFrame* caller_frame = nullptr;
  bool cut_at_depth = false;      // no user frame, and the stack was cut at the run's --depth
  std::span<const uint32_t> parts;  // indices in RunAnalysis::sites, largest first (in RunAnalysis::group_parts)
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
  uint64_t allocations = 0;
  uint64_t temporary_allocations = 0;
  int64_t freed_at_exit_bytes = 0;
  double first_seen_s = 0;
  Verdict verdict = Verdict::kUnknown;  // its judgement's
  double growth_bytes_per_min = 0;
  // Why every site of it is the runtime's own residue (suppressions.h, device_layers.h); null when not.
  const char* runtime = nullptr;
  int64_t inner_bytes = 0;  // of a caching allocator's reserve: the c10_cuda bytes inside it
  // Why everything its sites lost is the runtime's own (lost_residue()); null when not.
  const char* lost_runtime = nullptr;
  LostFigures lost;  // its sites', at the leak check
  // The live bytes over time of the sites of its key that hold nothing at the judged snapshot
  // (gone_sites_series()): empty when none held anything at a sample.
  std::vector<SeriesPoint> gone_series;
  // What tells it from other groups in any read of the stream (GroupKeys::identity_of()).
  uint64_t identity = 0;
  bool user_keyed = false;  // keyed by its first user frame (and the one that called it)
  // Of a group read in parts whose sites the last read does not hold all of (a family of more
  // sites than a part, report/report_passes.h): what all its sites add up to, its parts being only
  // its largest (kPartsShown) and those the report names; null for any other.
  const GroupSums* summed = nullptr;
};

// How many of a group's largest sites a report names; a summed group keeps no more of them whole.
inline constexpr size_t kPartsShown = 5;

// group_site_count() is how many sites `group` has.
size_t group_site_count(const GroupReport& group);

// Live bytes of everything one task name, or one thread, owns, and its part of the leaks' growth.
struct OwnerReport {
  std::string name;  // task name ("" = no task), or thread name
  int64_t tid = 0;   // threads only
  int64_t live_bytes = 0;
  // Its share of each of the program's leaks' growth, as it holds a share of their live bytes; 0
  // when not growing.
  double growth_bytes_per_min = 0;
  double mann_kendall_z = 0;  // of the floor of its own live bytes over the run
  bool growing = false;  // it holds at least 1% of the leaks' growth
};

struct ResidencyFinding {
  std::string kind;  // "untracked_growth"
  double rss_growth_bytes_per_min = 0;
  double tracked_growth_bytes_per_min = 0;
  double untracked_growth_bytes_per_min = 0;
  double mann_kendall_z = 0;
  std::string text;
};

// When tracked host bytes peaked, up to the judged snapshot, and what held them; or, as the device
// peak, device memory the program held (tensors, and the driver's blocks outside a caching
// allocator's reserve).
struct PeakReport {
  struct Holder {
    const SymbolizedFrame* frame = nullptr;  // the first user frame, or the innermost frame when there is none
    int64_t bytes = 0;        // at the peak
    size_t group = SIZE_MAX;  // the group of the judged snapshot with that frame, if any
    uint32_t site = 0;        // the first of its sites, in the stream's order
    uint64_t identity = 0;    // as its group's (GroupReport::identity)
  };
  uint32_t snapshot = 0;  // from 1; 0 when nothing was ever tracked
  double time_s = 0;
  int64_t tracked_bytes = 0;
  std::vector<Holder> holders;  // by bytes at the peak, largest first
};

// The most device memory the program took from the driver on one device, up to the judged
// snapshot: device blocks (a caching allocator's segments among them), managed memory, and tensors
// outside any tracked block; the moment a CUDA out-of-memory error on that device would have come.
// The device peak above sums the devices and counts tensors in place of the segments that hold
// them; sites are not told apart by device in the stream, so a device's peak has no holders.
struct DevicePeak {
  int device = -1;  // the device's ordinal; -1 when the driver did not say
  int64_t bytes = 0;
  uint32_t snapshot = 0;  // from 1
  double time_s = 0;
};

// What teardown (from the mark to the end of the stream) did to tracked bytes.
struct TeardownReport {
  uint32_t mark = 0;  // snapshot index of the mark; 0 when the stream has none
  double begin_s = 0;
  double end_s = 0;
  int64_t freed_bytes = 0;  // live at the judged snapshot and gone at the end, all sites
};

inline int verdict_rank(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLeak: return 0;
    case Verdict::kCache: return 1;
    case Verdict::kStartup: return 2;
    case Verdict::kUnknown: return 3;
  }
  return 3;
}

// ranks_before() is the order of a report's sites and groups: leaks first by growth rate, then
// caches, startup residents and unknown sites by live bytes.
template <typename Ranked>
bool ranks_before(const Ranked& a, int64_t a_bytes, const Ranked& b, int64_t b_bytes) {
  int rank_a = verdict_rank(a.verdict), rank_b = verdict_rank(b.verdict);
  if (rank_a != rank_b) return rank_a < rank_b;
  if (rank_a == 0 && a.growth_bytes_per_min != b.growth_bytes_per_min) return a.growth_bytes_per_min > b.growth_bytes_per_min;
  return a_bytes > b_bytes;
}

// How many groups and sites of each verdict a run has, in verdict_rank() order, whatever --top and
// --min-bytes leave out.
inline constexpr size_t kVerdictCount = 4;
struct VerdictCounts {
  std::array<size_t, kVerdictCount> groups{};
  std::array<size_t, kVerdictCount> sites{};
};

// How many of a peak's holders a report names.
inline constexpr size_t kPeakHoldersShown = 5;

// The sections of a report, each listing groups of one verdict (report/report_format.h).
enum class ReportSection : uint8_t { kLeaks, kRuntimeGrowing, kCaches, kStartup, kNotJudged };
inline constexpr size_t kReportSections = 5;

// How many groups of at least --min-bytes one section counts; of the unjudged, the groups of blocks
// that hold 0 bytes apart (malloc(0), empty buffers: counted, never listed).
struct SectionCount {
  size_t groups = 0;
  size_t empty_groups = 0;
  int64_t empty_blocks = 0;
};
using SectionCounts = std::array<SectionCount, kReportSections>;

// Why a gate leaves a site out of what it counts; "" when it counts it.
using SiteLeftOut = std::function<std::string(RunAnalysis& analysis, const SiteReport& site)>;

struct AnalysisOptions {
  SnapshotChoice at;
  std::string fold;  // framework modules for grouping and folding (--fold)
  // Memory for the sites held at once (0: no limit). A stream with more is read in parts, each
  // holding whole groups, and the analysis keeps only the groups and sites a report of `top` per
  // section and per verdict of at least `min_bytes` shows (report/report_passes.h); with `top` 0,
  // it is read at once.
  uint64_t site_memory = 0;
  size_t top = 0;
  int64_t min_bytes = 0;
  // Read in parts, keep every leak group too, whatever `top`: the gate counts them all.
  bool every_leak = false;
  // Why the gate leaves a site out ("" when it counts), for groups too large for a part, whose
  // sites are not all held when the gate reads them; null when no gate reads the analysis.
  SiteLeftOut gate_left_out;
};

struct RunAnalysis {
  RunState state;  // the whole stream: modules and stacks for symbolization (its counters released)
  ChosenSnapshot at;
  SnapshotInfo judged;  // INFO of the judged snapshot
  std::array<int64_t, internal::kDomainCount> live_bytes_by_domain{};  // at the judged snapshot
  std::vector<DeviceMemory> devices;  // what the judged snapshot says of each device's memory
  std::unordered_map<uint32_t, int64_t> inner_bytes;  // by cuda site: the c10_cuda bytes inside it, at the judged snapshot
  // Every site as taken (at the judged snapshot, earlier, or at the leak check), and their
  // details: what SiteReport::captured refers to.
  std::vector<CapturedSite> captured;
  SiteCaptures captures;
  std::vector<SiteReport> sites;    // leaks by growth, then caches, startup, unknown by size
  std::vector<GroupReport> groups;  // the same order
  std::vector<uint32_t> group_parts;  // every group's parts, group after group (GroupReport::parts)
  std::vector<OwnerReport> by_task;    // by live bytes, largest first
  std::vector<OwnerReport> by_thread;
  std::vector<ProcessSample> residency;  // up to the judged snapshot
  uint64_t peak_program_rss_bytes = 0;   // the largest RSS of any snapshot less leakscope's own memory
  size_t damaged_spans = 0;              // spans of the stream that could not be read (warned of)
  std::vector<ResidencyFinding> findings;
  // The `lost` finding: groups judged other than leak that hold lost blocks, the runtime's own
  // residue aside; most lost bytes first. Whether and how the run was scanned: state.leak_check().
  std::vector<size_t> lost_groups;
  PeakReport peak;
  PeakReport device_peak;  // snapshot 0 when no device memory was tracked
  std::vector<DevicePeak> device_peaks;  // by ordinal; only devices the program took memory on
  TeardownReport teardown;
  // Read in parts (AnalysisOptions::site_memory): `groups` and `sites` hold only those a report
  // shows (the top of each section and of each verdict, the peaks' largest holders), and these are
  // the whole stream's counts. What is program-wide (owners, teardown, peaks, residency) is of the
  // whole stream either way.
  struct CountsInParts {
    SectionCounts sections{};
    VerdictCounts verdicts;
    // The groups left unjudged that are not the runtime's own residue (the gate's note).
    size_t unjudged_groups = 0;
    int64_t unjudged_bytes = 0;
  };
  std::optional<CountsInParts> read_in_parts;
  size_t parts_read = 0;  // how many parts the groups were read in; 0: at once
  std::unique_ptr<Symbolizer> symbolizer;  // over `state`
  FrameRoles roles;
  // The summed groups whose largest sites this read holds (GroupReport::summed).
  std::shared_ptr<const SummedGroups> summed_groups;
  // A read that adds to summed groups: the series of the gone sites it holds whose groups have no
  // live site in it, by GroupReport::identity (another read may hold their live sites).
  std::unordered_map<uint64_t, std::vector<SeriesPoint>> unmatched_gone_series;
  std::unique_ptr<LiveSeries> series;  // each site's live bytes over time, up to the judged snapshot
  double now_s = 0;  // the judged snapshot's time
  // What judgements are made at: now_s, or the start of a shutdown that freed up to the judged
  // teardown mark (ChosenSnapshot::shutdown), where the program's own run ended.
  double judged_until_s = 0;

  // Of a site of `sites`: as taken, its domain and stack.
  const CapturedSite& capture_of(const SiteReport& site) const { return captured[site.captured]; }
  Domain domain_of(const SiteReport& site) const { return state.sites()[capture_of(site).site].domain; }
  uint32_t stack_of(const SiteReport& site) const { return state.sites()[capture_of(site).site].stack; }
  // own_live_bytes() is `site`'s live bytes without those of the layer above that lie in it: a
  // caching allocator's reserve counts only what no tensor holds (the tensors count at their own
  // sites), so that totals over sites (the exports') add no byte twice.
  int64_t own_live_bytes(const SiteReport& site) const;
};

// freed_at_exit_bytes() is what of site `site`'s bytes at the judged snapshot were gone by the end
// of the stream.
int64_t freed_at_exit_bytes(const RunAnalysis& analysis, const SiteReport& site);

// freed_when() says when those bytes went, as the report and the gate word it: "at exit" after
// exit() or an interpreter's finalization, "at the end" when main returned (its locals with it).
inline const char* freed_when(const RunAnalysis& analysis) { return analysis.at.main_returned ? "at the end" : "at exit"; }

// verdict_counts() counts the groups and sites of `analysis` by verdict.
VerdictCounts verdict_counts(const RunAnalysis& analysis);

// group_id() is how a report names group `index` of analysis.groups: the stream's id of its
// largest site (the first of its parts), the same however the stream was read.
uint32_t group_id(const RunAnalysis& analysis, size_t index);

// site_summary() is site `index` of analysis.sites whole, with its owners' names; site_detail()
// adds its judgement and the rest a report shows of it.
SiteSummary site_summary(const RunAnalysis& analysis, size_t index);
SiteDetail site_detail(const RunAnalysis& analysis, size_t index);

// site_judgement() and group_judgement() are the whole judgements of a site and a group, made
// again from their series and births: only verdicts and rates are kept for all of them.
SiteJudgement site_judgement(const RunAnalysis& analysis, size_t index);
SiteJudgement group_judgement(const RunAnalysis& analysis, size_t index);

// How precise a sampled run's live heap and tensor figures are (docs/RUNTIME.md, sampled mode): about how
// many recorded allocations they rest on, and their relative standard error. A block of s bytes is
// recorded with p = 1 - e^(-s/R) and counted 1/p times, so n blocks of s bytes rest on about n·p
// recorded ones, with a variance of n·s²·(1-p)/p: one over the square root of the recorded ones
// for blocks much smaller than R, nothing for blocks much larger (recorded whole). Both 0 in exact
// mode and for what has no live bytes of the sampled domains, heap and c10_cpu (mappings and
// device memory are recorded whole).
struct SampledPrecision {
  double recorded_blocks = 0;
  double relative_error = 0;
};
SampledPrecision sampled_precision(const RunAnalysis& analysis, const GroupReport& group);

// What sampled_precision() sums over a group's sites.
struct PrecisionSum {
  double recorded_blocks = 0;
  double variance = 0;
  double bytes = 0;
};
void add_precision(const RunAnalysis& analysis, const SiteReport& site, PrecisionSum* sum);
SampledPrecision precision_of(const PrecisionSum& sum);

// older_than_freed_bytes() is how many of a group's live bytes have lived longer than any block
// their own site freed: what a cache's turnover has not reached, so the leak's own part when one
// site both keeps some of its blocks and lets the others go (docs/ANALYSIS.md, "Leaks that share
// a site with a cache"); a part that freed nothing adds nothing. Lifetimes are counted in snapshot
// epochs, births in the stream's birth bins; a bin counts when it ended before the first epoch a
// block could be born in and not be older. -1 when no part freed anything, when a part's longest
// freed lifetime is the open last bucket, or when a part is taken from another snapshot than the
// judged one.
int64_t older_than_freed_bytes(const RunAnalysis& analysis, const GroupReport& group);

// What older_than_freed_bytes() sums over a group's parts, one at a time.
struct PartAges {
  bool unknown = false;  // a part makes it -1 whatever the others
  bool freed = false;
  int64_t older = 0;
  int64_t bytes() const { return unknown || !freed ? -1 : older; }
};
void add_part_ages(const RunAnalysis& analysis, const SiteReport& site, PartAges* ages);

// shown_older_than_freed_bytes() is older_than_freed_bytes() of a leak group when it sets a part
// apart, some of its bytes and not all; else -1.
int64_t shown_older_than_freed_bytes(const RunAnalysis& analysis, const GroupReport& group);

// group_judgement_of() judges `group` on its parts (its one site's own, when it has one), or on
// its sums.
SiteJudgement group_judgement_of(const RunAnalysis& analysis, const GroupReport& group);

// joint_phase() is the start-up phase of a group whose parts were made in `a` and `b`: none unless
// both were made in one.
StartupPhase joint_phase(StartupPhase a, StartupPhase b);

// add_series() adds `part` to `sum`: series that share one time grid (LiveSeries tracks all end at
// its last sample), aligned at their ends.
void add_series(std::vector<SeriesPoint>* sum, const std::vector<SeriesPoint>& part);

// group_series() is a group's live bytes over time: the sum of its sites' series (as judged), and
// of those of its key that were gone by the judged snapshot.
std::vector<SeriesPoint> group_series(const RunAnalysis& analysis, const GroupReport& group);

// analyze_run() reads the whole stream. Throws StreamError like load_run(). The result refers to
// itself (the symbolizer reads `state`, groups their parts), hence the pointer.
std::unique_ptr<RunAnalysis> analyze_run(const std::string& path, const AnalysisOptions& options = {});
std::unique_ptr<RunAnalysis> analyze_run(StreamReader& reader, const AnalysisOptions& options = {});

// analyze_sites() is analyze_run() of the sites whose stacks `keep` chooses (all when null;
// RunState::keep_sites_of()), judged at `at`, chosen from `marks`; `warn` as read_run()'s. What is
// program-wide is the whole stream's, but for what is summed over sites (the owners, what teardown
// freed, the live bytes by domain, the peaks' holders): that is of the sites kept. `symbolizer`,
// when given, is one of an earlier read of the stream, rebound to this one: the modules' debug
// information is read once for every part. The groups of `summed` are made from their sums, the
// sites held being their largest (report/group_sums.h); with `summing`, the read is one that adds
// to such sums, and keeps the gone sites' series that match no group it holds.
std::unique_ptr<RunAnalysis> analyze_sites(StreamReader& reader, const ChosenSnapshot& at, const std::vector<SnapshotMark>& marks,
                                           const AnalysisOptions& options, std::function<bool(uint32_t stack)> keep, bool warn,
                                           std::unique_ptr<Symbolizer> symbolizer = nullptr,
                                           std::shared_ptr<const SummedGroups> summed = nullptr, bool summing = false);

// section_of() is the section of a report that lists `group`.
ReportSection section_of(const GroupReport& group);
// count_in_sections() adds `group` to `counts` when it holds at least `min_bytes`.
void count_in_sections(const GroupReport& group, int64_t min_bytes, SectionCounts* counts);

// A leak's bytes that count for its owners, all and by owner (owner_sums()).
struct OwnedBytes {
  int64_t bytes = 0;
  std::map<std::string, int64_t> by_task;
  std::map<uint32_t, int64_t> by_thread;
};

// What the owners' lines are made of: for each task name and thread, the bytes it holds at the
// judged snapshot, its share of the leaks' growth and its live bytes over time (none for one live
// at no sample, which is not shown); and the growth of all the program's leaks. Sums of the
// sites', so that parts read apart add up.
struct OwnerSums {
  // A sum of growth rates that is the same in whatever order its terms come, as parts read apart
  // bring them in another order than one read: fixed point, in 1/1024 of a byte a minute.
  class Rate {
   public:
    void add(double bytes_per_min) { units_ += std::llround(bytes_per_min * kUnitsPerByte); }
    void add(const Rate& other) { units_ += other.units_; }
    double bytes_per_min() const { return static_cast<double>(units_) / kUnitsPerByte; }

   private:
    static constexpr double kUnitsPerByte = 1024;
    int64_t units_ = 0;
  };
  struct Held {
    int64_t bytes = 0;
    Rate growth;
    std::vector<SeriesPoint> series;
  };
  std::map<std::string, Held> tasks;
  std::map<uint32_t, Held> threads;  // by index into RunState::threads()
  Rate leaks_growth;

  void add(const OwnerSums& other);
  // share() adds a leak's growth, shared out to its owners as they hold its bytes.
  void share(double growth_bytes_per_min, const OwnedBytes& owned);
};
// owner_sums() sums the owners of `analysis`'s sites, and with `share_growth` the growth of its
// leaks but for summed groups' (shared from their sums, report/group_sums.h).
OwnerSums owner_sums(const RunAnalysis& analysis, bool share_growth = true);
// counts_for_owners() tells whether `site`'s bytes count for its owners: a caching allocator's
// reserve holds the tensors counted at their own sites (never both), and a site taken at the leak
// check is not live at the judged snapshot.
bool counts_for_owners(const SiteReport& site);
// set_owners() makes analysis.by_task and by_thread from `sums`.
void set_owners(RunAnalysis& analysis, const OwnerSums& sums);

// untracked_growth() judges process memory against tracked host memory (heap + mmap + brk).
std::vector<ResidencyFinding> untracked_growth(const std::vector<ProcessSample>& samples);

// Domains that are host memory: heap, mmap, brk and c10_cpu (tensor storage, counted apart from
// the heap, src/c10/c10_hooks.cc); device memory is not in RSS.
bool is_host_domain(Domain domain);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_ANALYSIS_H_
