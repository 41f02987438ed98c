// File: analysis.h
//
// One pass over a stream that yields everything `leakscope report` and `diff` show: every live
// site with its verdict and the numbers behind it, the process's memory over time beside tracked
// bytes, and residency findings (RSS growth that tracked allocations do not explain). Memory is
// bounded by the number of sites and live (triple, epoch) pairs, not by the stream's length.
// The rules are in docs/ANALYSIS.md.
#ifndef LEAKSCOPE_REPORT_ANALYSIS_H_
#define LEAKSCOPE_REPORT_ANALYSIS_H_

#include <array>
#include <string>
#include <vector>

#include "report/run_state.h"
#include "report/live_series.h"
#include "report/site_summary.h"
#include "report/verdict.h"

namespace leakscope::report {

struct SiteReport {
  SiteSummary summary;
  SiteJudgement judgement;
  double first_seen_s = 0;
  double median_age_s = 0;  // half of the live bytes are at least this old
  std::array<uint64_t, internal::kLifetimeBuckets> freed_bytes_by_lifetime{};
};

// Live bytes and growth of everything one task name, or one thread, owns.
struct OwnerReport {
  std::string name;  // task name ("" = no task), or thread name
  int64_t tid = 0;   // threads only
  int64_t live_bytes = 0;
  double growth_bytes_per_min = 0;  // Theil–Sen of the floor over the whole run
  double mann_kendall_z = 0;
  bool growing = false;  // Z ≥ kTrendZ and a positive slope
};

struct ResidencyFinding {
  std::string kind;  // "untracked_growth"
  double rss_growth_bytes_per_min = 0;
  double tracked_growth_bytes_per_min = 0;
  double untracked_growth_bytes_per_min = 0;
  double mann_kendall_z = 0;
  std::string text;
};

struct RunAnalysis {
  RunState state;                      // at the analysed snapshot
  std::vector<SiteReport> sites;       // leaks by growth, then caches, startup, unknown by size
  std::vector<OwnerReport> by_task;    // by live bytes, largest first
  std::vector<OwnerReport> by_thread;
  std::vector<ProcessSample> residency;
  std::vector<ResidencyFinding> findings;
};

// analyze_run() reads `path` up to its `at`-th snapshot (1-based; 0 = the last). Throws
// StreamError like load_run().
RunAnalysis analyze_run(const std::string& path, uint32_t at = 0);
RunAnalysis analyze_run(StreamReader& reader, uint32_t at = 0);

// untracked_growth() judges process memory against tracked host memory (heap + mmap + brk).
std::vector<ResidencyFinding> untracked_growth(const std::vector<ProcessSample>& samples);

// Domains that are host memory: heap, mmap, brk and c10_cpu (tensor storage, counted apart from
// the heap, src/c10/c10_hooks.cc); device memory is not in RSS.
bool is_host_domain(Domain domain);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_ANALYSIS_H_
