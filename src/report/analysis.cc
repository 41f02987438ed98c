#include "report/analysis.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/units.h"

namespace leakscope::report {
namespace {

// Untracked growth must be at least this share of RSS growth, and this fast, to be reported.
constexpr double kMinUntrackedShare = 0.5;
constexpr double kMinUntrackedBytesPerMin = 256 * 1024;

int verdict_rank(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLeak: return 0;
    case Verdict::kCache: return 1;
    case Verdict::kStartup: return 2;
    case Verdict::kUnknown: return 3;
  }
  return 3;
}

OwnerReport owner_report(const std::vector<SeriesPoint>& points) {
  OwnerReport owner;
  if (points.empty()) return owner;
  owner.live_bytes = static_cast<int64_t>(points.back().value);
  std::vector<SeriesPoint> floor = live_floor(points);
  owner.growth_bytes_per_min = theil_sen_slope(floor) * 60;
  owner.mann_kendall_z = mann_kendall(floor).z;
  owner.growing = owner.mann_kendall_z >= kTrendZ && owner.growth_bytes_per_min > 0;
  return owner;
}

void sort_by_live_bytes(std::vector<OwnerReport>& owners) {
  std::stable_sort(owners.begin(), owners.end(),
                   [](const OwnerReport& a, const OwnerReport& b) { return a.live_bytes > b.live_bytes; });
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
    double host = 0;
    for (size_t d = 0; d < sample.tracked_bytes.size(); ++d) {
      if (is_host_domain(static_cast<Domain>(d))) host += static_cast<double>(sample.tracked_bytes[d]);
    }
    tracked.push_back({sample.time_s, host});
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
      finding.untracked_growth_bytes_per_min >= kMinUntrackedBytesPerMin) {
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

RunAnalysis analyze_run(const std::string& path, uint32_t at) {
  StreamReader reader(path);
  return analyze_run(reader, at);
}

RunAnalysis analyze_run(StreamReader& reader, uint32_t at) {
  RunAnalysis analysis;
  LiveSeries series;
  read_run(reader, at, &analysis.state, [&series](const RunState& state) { series.observe(state); });
  series.finish(analysis.state);

  const RunState& state = analysis.state;
  double now_s = static_cast<double>(state.last_snapshot().time_ns) / 1e9;
  for (SiteSummary& summary : summarize_live_sites(state)) {
    SiteEvidence evidence;
    evidence.live_bytes = series.site(summary.site);
    evidence.births = summary.births;
    evidence.now_s = now_s;
    evidence.epochs = state.snapshot_count();
    SiteReport report;
    report.judgement = judge_site(evidence);
    const Site& site = state.sites()[summary.site];
    report.first_seen_s = static_cast<double>(site.first_seen_ns) / 1e9;
    report.median_age_s = now_s * (1 - report.judgement.median_birth_fraction);
    report.freed_bytes_by_lifetime = site.freed_bytes_by_lifetime;
    report.summary = std::move(summary);
    analysis.sites.push_back(std::move(report));
  }
  std::stable_sort(analysis.sites.begin(), analysis.sites.end(), [](const SiteReport& a, const SiteReport& b) {
    int rank_a = verdict_rank(a.judgement.verdict), rank_b = verdict_rank(b.judgement.verdict);
    if (rank_a != rank_b) return rank_a < rank_b;
    if (rank_a == 0) return a.judgement.growth_bytes_per_min > b.judgement.growth_bytes_per_min;
    return a.summary.live_bytes > b.summary.live_bytes;
  });
  for (const std::string& name : series.task_names()) {
    OwnerReport owner = owner_report(series.task(name));
    owner.name = name;
    analysis.by_task.push_back(owner);
  }
  for (uint32_t thread : series.thread_indexes()) {
    OwnerReport owner = owner_report(series.thread(thread));
    owner.name = state.threads()[thread].name;
    owner.tid = state.threads()[thread].tid;
    analysis.by_thread.push_back(owner);
  }
  sort_by_live_bytes(analysis.by_task);
  sort_by_live_bytes(analysis.by_thread);
  analysis.residency = series.process();
  analysis.findings = untracked_growth(analysis.residency);
  return analysis;
}

}  // namespace leakscope::report
